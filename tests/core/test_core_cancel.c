/*
 * test_core_cancel.c - cancel and destroy: sticky cancel, waking every
 * waiter, destroy while in use, destroy racing a wait, freeing right after a
 * wait (SPEC section 2).
 * Each case is named after the SPEC row (or the call) it checks; see
 * tests/README.md for the row -> case table.
 */
#include "core_api.h"

/* ---- cancel ---------------------------------------------------------------- */

TEST(cancel_sticky_idempotent_wakes_blocked)
{
    for (int pi = 0; pi < 3; pi++) {
        for (int k = 0; k < C_NKINDS; k++) {
            abar_t b;
            atomic_store(&ncompl, 0);
            abar_attr_t at = { count_completion, NULL, POLICIES[pi] };
            CHECK_EQ(abar_init(&b, 3, &at), 0);
            abar_token_t t = abar_arrive(&b); /* 1 of 3 */
            struct caller c;
            caller_start(&c, &b, k, t);
            await_inside(&b, 1);
            msleep(5);
            CHECK(!atomic_load(&c.done));
            CHECK_EQ(abar_cancel(&b), 0);
            int r = caller_join(&c);
            if (r != ECANCELED) {
                fprintf(stderr, "policy %s, blocked in %s: returned %d after cancel, want ECANCELED\n",
                        policy_name(POLICIES[pi]), kind_name(k), r);
                _exit(1);
            }
            /* sticky and idempotent */
            CHECK_EQ(abar_cancel(&b), 0);
            CHECK_EQ(abar_cancel(&b), 0);
            CHECK_EQ(abar_wait(&b, t), ECANCELED);
            CHECK_EQ(abar_test(&b, t), ECANCELED);
            struct timespec ts = ts_in(1000000000);
            CHECK_EQ(abar_wait_until(&b, t, &ts), ECANCELED);
            CHECK_EQ(abar_token_error(abar_arrive(&b)), ECANCELED);
            CHECK_EQ(abar_arrive_and_wait(&b), ECANCELED);
            CHECK_EQ(abar_arrive_and_drop(&b), ECANCELED);
            CHECK_EQ(abar_token_error(abar_arrive_n(&b, 2)), ECANCELED);
            /* the completion never runs again */
            CHECK_EQ(atomic_load(&ncompl), 0);
            CHECK_EQ(abar_phase(&b), 0);
            /* a later blocked-style wait returns at once too */
            caller_start(&c, &b, k, t);
            CHECK_EQ(caller_join(&c), ECANCELED);
            CHECK_EQ(inside_of(&b), 0);
            CHECK_EQ(abar_destroy(&b), 0);
        }
    }
}

/* Several threads blocked in different calls, all woken by one cancel. */
TEST(cancel_wakes_every_blocked_thread)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_t b;
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&b, 10, &at), 0);
        abar_token_t t = abar_arrive(&b);
        struct caller c[C_NKINDS * 2];
        for (int i = 0; i < C_NKINDS * 2; i++) caller_start(&c[i], &b, i % C_NKINDS, t);
        await_inside(&b, C_NKINDS * 2);
        CHECK_EQ(abar_cancel(&b), 0);
        for (int i = 0; i < C_NKINDS * 2; i++) CHECK_EQ(caller_join(&c[i]), ECANCELED);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

TEST(cancel_completed_phase_still_0)
{
    abar_t b;
    atomic_store(&ncompl, 0);
    abar_attr_t at = { count_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 2, &at), 0);
    abar_token_t t0 = abar_arrive(&b);
    CHECK(tok_ok(abar_arrive(&b)));           /* phase 0 complete */
    abar_token_t t1 = abar_arrive(&b);        /* phase 1 open */
    CHECK_EQ(abar_cancel(&b), 0);
    struct timespec past = ts_in(-1), future = ts_in(1000000000);
    CHECK_EQ(abar_wait(&b, t0), 0);
    CHECK_EQ(abar_test(&b, t0), 0);
    CHECK_EQ(abar_wait_until(&b, t0, &past), 0);
    CHECK_EQ(abar_wait_until(&b, t0, &future), 0);
    CHECK_EQ(abar_wait(&b, t1), ECANCELED);
    CHECK_EQ(abar_wait_until(&b, t1, &past), ECANCELED);
    CHECK_EQ(atomic_load(&ncompl), 1);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(cancel_then_destroy_init_fresh)
{
    abar_t b;
    atomic_store(&ncompl, 0);
    abar_attr_t at = { count_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 2, &at), 0);
    abar_token_t old = abar_arrive(&b);
    CHECK_EQ(abar_cancel(&b), 0);
    CHECK_EQ(abar_destroy(&b), 0);
    CHECK_EQ(abar_init(&b, 2, &at), 0);
    CHECK_EQ(abar_wait(&b, old), EINVAL); /* a token of the old life */
    abar_token_t t = abar_arrive(&b);
    CHECK(tok_ok(t));
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_wait(&b, t), 0);
    CHECK_EQ(atomic_load(&ncompl), 1);
    CHECK_EQ(abar_phase(&b), 1);
    /* and also init straight over a cancelled barrier */
    CHECK_EQ(abar_cancel(&b), 0);
    CHECK_EQ(abar_init(&b, 1, &at), 0);
    CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* ---- destroy --------------------------------------------------------------- */

TEST(destroy_ebusy_while_waiting)
{
    for (int pi = 0; pi < 3; pi++) {
        for (int k = 0; k < C_NKINDS; k++) {
            abar_t b;
            atomic_store(&ncompl, 0);
            abar_attr_t at = { count_completion, NULL, POLICIES[pi] };
            CHECK_EQ(abar_init(&b, 2, &at), 0);
            abar_token_t t = {0, 0};
            if (k != C_ARRIVE_AND_WAIT) t = abar_arrive(&b); /* 1 of 2 */
            struct caller c;
            caller_start(&c, &b, k, t);
            await_inside(&b, 1);
            uint64_t t0 = now_ns();
            /* repeatedly, also while the waiter moves from spinning to parked */
            for (int i = 0; now_ns() - t0 < 80000000u; i++) {
                int r = abar_destroy(&b);
                if (r != EBUSY) {
                    fprintf(stderr, "policy %s, thread in %s: destroy -> %d (try %d), want EBUSY\n",
                            policy_name(POLICIES[pi]), kind_name(k), r, i);
                    _exit(1);
                }
                if (i % 16 == 0) msleep(1);
            }
            /* nothing disturbed */
            CHECK(!atomic_load(&c.done));
            CHECK_EQ(abar_phase(&b), 0);
            if (k != C_CURRENT_WAIT) {
                CHECK_EQ(abar_test(&b, t.id ? t : abar_current(&b)), EBUSY);
            }
            CHECK_EQ(atomic_load(&ncompl), 0);
            /* complete the phase: the waiter returns 0; then destroy works */
            if (k == C_CURRENT_WAIT) CHECK(tok_ok(abar_arrive(&b)));
            CHECK(tok_ok(abar_arrive(&b)));
            CHECK_EQ(caller_join(&c), 0);
            CHECK_EQ(atomic_load(&ncompl), 1);
            CHECK_EQ(abar_destroy(&b), 0);
            CHECK_EQ(abar_destroy(&b), EINVAL); /* already destroyed */
        }
    }
}

/* Calls on a destroyed barrier are refused, not undefined. */
TEST(calls_after_destroy_einval)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(abar_destroy(&b), 0);
    CHECK_EQ(abar_destroy(&b), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive(&b)), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 1)), EINVAL);
    CHECK_EQ(abar_token_error(abar_current(&b)), EINVAL);
    CHECK_EQ(abar_wait(&b, t), EINVAL);
    CHECK_EQ(abar_test(&b, t), EINVAL);
    struct timespec ts = ts_in(1000000);
    CHECK_EQ(abar_wait_until(&b, t, &ts), EINVAL);
    CHECK_EQ(abar_arrive_and_wait(&b), EINVAL);
    CHECK_EQ(abar_arrive_and_drop(&b), EINVAL);
    CHECK_EQ(abar_cancel(&b), EINVAL);
    CHECK_EQ(abar_phase(&b), 0);
}

/* The last thread to leave destroys the barrier and frees it at once, phase
 * after phase.  The barrier sits alone in an mmap'ed page that is unmapped
 * at once, so a call touching it after it returned faults even without ASan;
 * the heap variant is for ASan. */
enum { FREE_T = 3 };
struct freeable {
    abar_t *b;
    _Atomic int left;
    bool heap;
};
static struct freeable *_Atomic free_slot;
static _Atomic int free_round_go, free_done_round;

static abar_t *free_alloc(bool heap)
{
#if defined(_WIN32)
    void *p = heap ? _aligned_malloc(sizeof(abar_t), 64)
                   : VirtualAlloc(NULL, 4096, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    CHECK(p != NULL);
#else
    if (heap) {
        void *p = NULL;
        CHECK_EQ(posix_memalign(&p, 64, sizeof(abar_t)), 0);
        return p;
    }
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
#endif
    return p;
}
static void free_release(struct freeable *f)
{
    int r = abar_destroy(f->b);
    if (r != 0) {
        fprintf(stderr, "last thread out: abar_destroy -> %d, want 0\n", r);
        _exit(1);
    }
#if defined(_WIN32)
    if (f->heap) _aligned_free(f->b);
    else VirtualFree(f->b, 0, MEM_RELEASE);
#else
    if (f->heap) free(f->b);
    else munmap(f->b, 4096);
#endif
}

static void *free_worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int round = 1;; round++) {
        while (atomic_load(&free_round_go) < round) {
            if (atomic_load(&free_round_go) < 0) return NULL;
            sched_yield();
        }
        struct freeable *f = atomic_load(&free_slot);
        int rc;
        switch ((round + me) % 3) {
        case 0: rc = abar_arrive_and_wait(f->b); break;
        case 1: rc = abar_wait(f->b, abar_arrive(f->b)); break;
        default: {
            struct timespec ts = ts_in(5000000000LL);
            rc = abar_wait_until(f->b, abar_arrive(f->b), &ts);
        }
        }
        CHECK_EQ(rc, 0);
        if (atomic_fetch_sub(&f->left, 1) == 1) {
            free_release(f);
            atomic_store(&free_done_round, round);
        }
    }
}

static void destroy_free_rounds(bool heap, int rounds)
{
    atomic_store(&free_round_go, 0);
    atomic_store(&free_done_round, 0);
    pthread_t th[FREE_T];
    for (int i = 0; i < FREE_T; i++) pthread_create(&th[i], NULL, free_worker, (void *)(intptr_t)i);
    static struct freeable fs;
    for (int round = 1; round <= rounds; round++) {
        abar_attr_t at = { NULL, NULL, POLICIES[round % 3] };
        fs.b = free_alloc(heap);
        fs.heap = heap;
        atomic_store(&fs.left, FREE_T);
        CHECK_EQ(abar_init(fs.b, FREE_T, &at), 0);
        atomic_store(&free_slot, &fs);
        atomic_store(&free_round_go, round);
        while (atomic_load(&free_done_round) < round) sched_yield();
    }
    atomic_store(&free_round_go, -1);
    for (int i = 0; i < FREE_T; i++) pthread_join(th[i], NULL);
    CHECK_EQ(atomic_load(&free_done_round), rounds);
}

TEST(destroy_right_after_own_wait_then_free)
{
    destroy_free_rounds(false, 1500);
    destroy_free_rounds(true, 1500);
}

/* A pair: one thread destroys the barrier the moment its own
 * abar_arrive_and_wait returns (retrying while abar_destroy says EBUSY) and
 * unmaps it, while the other may still be inside its wait, released but
 * not yet back.  Destroy must say EBUSY until that thread is out; a waiter
 * that polled the unmapped page would fault.  Either thread may carry the
 * phase, and the policy varies (the pair's own path, abar_arrive_and_wait's
 * fallback when told to park).  The completion_ tests run the same with a
 * completion function, which takes the general path instead of the pair's. */
static void noop_completion(void *arg) { (void)arg; }
#if defined(_WIN32)
TEST_NOT_HERE(pair_destroy_while_partner_returns_is_safe, "catches the fault of a use after free with a POSIX signal handler (sigaction): Windows has none")
TEST_NOT_HERE(completion_pair_destroy_while_partner_returns_is_safe, "catches the fault of a use after free with a POSIX signal handler (sigaction): Windows has none")
TEST_NOT_HERE(pair_destroy_while_partner_held_in_its_wait, "catches the fault of a use after free with a POSIX signal handler (sigaction): Windows has none")
TEST_NOT_HERE(completion_pair_destroy_while_partner_held_in_its_wait, "catches the fault of a use after free with a POSIX signal handler (sigaction): Windows has none")
TEST_NOT_HERE(destroy_while_completer_returns_is_safe, "catches the fault of a use after free with a POSIX signal handler (sigaction): Windows has none")
#else
static abar_t *_Atomic pd_b;
static _Atomic int pd_rc;
static void pd_segv(int sig)
{
    static const char msg[] = "SIGSEGV: a pair's waiter touched the barrier after its partner's "
                              "abar_destroy returned 0 (a wait not registered as one)\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) {}
    _exit(1);
}
static void *pd_partner(void *arg)
{
    (void)arg;
    claim_hazard_record();
    atomic_store(&pd_rc, abar_arrive_and_wait(atomic_load(&pd_b)));
    return NULL;
}

/* A completion function that does nothing: a barrier of two with one is
 * not a ticket pair, so abar_arrive_and_wait takes its general path, not
 * the pair's. */

static void pair_destroy_while_partner_returns(abar_completion_fn *fn)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = pd_segv;
    sigaction(SIGSEGV, &sa, NULL);
    unsigned busy = 0;
    for (int i = 0; i < 3000; i++) {
        abar_t *b = free_alloc(false);
        abar_attr_t at = { fn, NULL, POLICIES[i % 3] };
        CHECK_EQ(abar_init(b, 2, &at), 0);
        atomic_store(&pd_b, b);
        atomic_store(&pd_rc, -1);
        pthread_t w;
        pthread_create(&w, NULL, pd_partner, NULL);
        CHECK_EQ(abar_arrive_and_wait(b), 0);
        int r;
        while ((r = abar_destroy(b)) == EBUSY) {
            busy++;
            sched_yield();
        }
        CHECK_EQ(r, 0);
        munmap(b, 4096);
        pthread_join(w, NULL);
        CHECK_EQ(atomic_load(&pd_rc), 0);
    }
    /* not a check (it depends on timing): how often the race was there */
    printf("  (destroy said EBUSY %u times over 3000 rounds)\n", busy);
}
TEST(pair_destroy_while_partner_returns_is_safe) { pair_destroy_while_partner_returns(NULL); }
TEST(completion_pair_destroy_while_partner_returns_is_safe) { pair_destroy_while_partner_returns(noop_completion); }

/* The same with the race forced: the partner arrives first and, while it
 * waits, a signal handler holds it until we have tried to destroy the
 * barrier once (5 s at most); the phase is completed before that try.
 * Destroy must say EBUSY then, and until the partner, back from the
 * handler, has seen its release and left.  The
 * partner never parks (ABAR_WAIT_SPIN): under ThreadSanitizer a signal
 * reaches a thread asleep in FUTEX_WAIT (a raw syscall it does not know
 * blocks) only once the thread wakes, which here no one would make it do. */
static _Atomic int pd_held, pd_release;
static void pd_hold(int sig)
{
    (void)sig;
    atomic_store(&pd_held, 1);
    struct timespec ts = { 0, 100000L };
    for (int i = 0; i < 50000 && !atomic_load(&pd_release); i++) nanosleep(&ts, NULL);
}

/* Round i waits (5 s at most) for cond; else says which step and the
 * barrier's state, and fails. */
#define PD_AWAIT(cond, what)                                                                 \
    do {                                                                                     \
        const uint64_t t0_ = now_ns();                                                       \
        while (!(cond)) {                                                                    \
            if (now_ns() - t0_ > 5000000000u) {                                              \
                fprintf(stderr, "round %d: %s not in 5 s (state %#llx, held %d)\n", i, what, \
                        (unsigned long long)atomic_load(&I(b)->state), atomic_load(&pd_held)); \
                _exit(1);                                                                    \
            }                                                                                \
            sched_yield();                                                                   \
        }                                                                                    \
    } while (0)

static void pair_destroy_while_partner_held(abar_completion_fn *fn)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = pd_segv;
    sigaction(SIGSEGV, &sa, NULL);
    sa.sa_handler = pd_hold;
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < 150; i++) {
        abar_t *b = free_alloc(false);
        abar_attr_t at = { fn, NULL, ABAR_WAIT_SPIN };
        CHECK_EQ(abar_init(b, 2, &at), 0);
        atomic_store(&pd_b, b);
        atomic_store(&pd_rc, -1);
        atomic_store(&pd_held, 0);
        atomic_store(&pd_release, 0);
        pthread_t w;
        pthread_create(&w, NULL, pd_partner, NULL);
        /* its arrival is in the state word: it is waiting (or about to) */
        PD_AWAIT(st_pending(atomic_load(&I(b)->state)) == 1, "the partner's arrival");
        pthread_kill(w, SIGUSR1);
        PD_AWAIT(atomic_load(&pd_held), "the partner in the signal handler");
        CHECK_EQ(abar_arrive_and_wait(b), 0); /* completes the phase */
        int r = abar_destroy(b);
        atomic_store(&pd_release, 1);
        CHECK_EQ(r, EBUSY); /* it is inside its wait, held (CHECK exits: nothing is freed) */
        while ((r = abar_destroy(b)) == EBUSY) sched_yield();
        CHECK_EQ(r, 0);
        munmap(b, 4096);
        pthread_join(w, NULL);
        CHECK_EQ(atomic_load(&pd_rc), 0);
    }
}
TEST(pair_destroy_while_partner_held_in_its_wait) { pair_destroy_while_partner_held(NULL); }
TEST(completion_pair_destroy_while_partner_held_in_its_wait) { pair_destroy_while_partner_held(noop_completion); }

/* The completing arrive is still inside abar_arrive when the waiters it
 * released free the barrier: it must not touch it after its release. */
static abar_t *_Atomic late_b;
static _Atomic int late_go, late_freed;
static void *late_waiter(void *arg)
{
    (void)arg;
    abar_t *b = atomic_load(&late_b);
    abar_token_t t = abar_current(b);
    atomic_store(&late_go, 1);
    CHECK_EQ(abar_wait(b, t), 0);
    CHECK_EQ(abar_destroy(b), 0);
    munmap(b, 4096);
    atomic_store(&late_freed, 1);
    return NULL;
}

static void late_segv(int sig)
{
    static const char msg[] = "SIGSEGV: the completing abar_arrive touched the barrier after its "
                              "release, once a released waiter had destroyed and unmapped it "
                              "(use after free; e.g. reading bi->ident after abar__complete)\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) {}
    _exit(1);
}

TEST(destroy_while_completer_returns_is_safe)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = late_segv;
    sigaction(SIGSEGV, &sa, NULL);
    for (int i = 0; i < 600; i++) {
        abar_t *b = free_alloc(false);
        abar_attr_t at = { NULL, NULL, POLICIES[i % 3] };
        CHECK_EQ(abar_init(b, 1, &at), 0);
        atomic_store(&late_b, b);
        atomic_store(&late_go, 0);
        atomic_store(&late_freed, 0);
        pthread_t w;
        pthread_create(&w, NULL, late_waiter, NULL);
        while (!atomic_load(&late_go)) sched_yield();
        if (i % 2) await_inside(b, 1);
        /* the single expected arrival; b may be gone before this returns */
        abar_token_t t = abar_arrive(b);
        CHECK(tok_ok(t));
        pthread_join(w, NULL);
        CHECK(atomic_load(&late_freed));
    }
}
#endif

/* A copy of a barrier taken word by word with atomic loads: other threads
 * may still read it (a failed CAS is a read; TSan counts it a write). */
static void snapshot(abar_t *dst, abar_t *src)
{
    for (size_t i = 0; i < sizeof src->_private / sizeof src->_private[0]; i++)
        dst->_private[i] = __atomic_load_n(&src->_private[i], __ATOMIC_RELAXED);
}

/* Destroy racing with a thread entering abar_wait (mode 0), or
 * abar_arrive_and_wait on a pair (mode 1: the pair's own path, which
 * registers, looks for destroy's mark and adds in one go; mode 2 with a
 * completion; mode 3 on a barrier of one, whose wait is its own CAS: it
 * registers all the same, since destroy leaves `state` as it is): either destroy
 * says EBUSY (the waiter is counted, and returns once the phase completes),
 * or it returns 0 and the waiter must not block on the dead barrier (it
 * returns EINVAL).  A waiter that registers after destroy's check and then
 * sleeps or spins on the destroyed barrier would hang here. */
static abar_t race_bar;
static abar_token_t race_tok;
static _Atomic int race_go, race_ready, race_go2, race_ret, race_mode;
static void *race_waiter(void *arg)
{
    (void)arg;
    claim_hazard_record(); /* the pair's path needs it */
    for (int round = 1;; round++) {
        int g;
        while ((g = atomic_load(&race_go)) < round) {
            if (g < 0) return NULL;
        }
        /* handshake, so that both threads are on a CPU at the moment of the race */
        atomic_store(&race_ready, round);
        while (atomic_load(&race_go2) < round) {}
        const int r = atomic_load(&race_mode) ? abar_arrive_and_wait(&race_bar)
                                              : abar_wait(&race_bar, race_tok);
        atomic_store(&race_ret, r + 1000);
    }
}

static void race_rounds(int mode)
{
    atomic_store(&race_mode, mode);
    atomic_store(&race_go, 0);
    atomic_store(&race_ready, 0);
    atomic_store(&race_go2, 0);
    pthread_t w;
    pthread_create(&w, NULL, race_waiter, NULL);
    int busy = 0, zero = 0;
    int delay = 0; /* dithered to where destroy meets the waiter's entry */
    uint64_t t_end = now_ns() + 2000000000u;
    for (int round = 1; now_ns() < t_end; round++) {
        /* mode 2: a completion function, so abar_arrive_and_wait takes the general path */
        abar_attr_t at = { mode == 2 ? noop_completion : NULL, NULL, POLICIES[round % 3] };
        /* mode 3: a barrier of one (its arrive_and_wait is one CAS) */
        CHECK_EQ(abar_init(&race_bar, mode == 3 ? 1 : 2, &at), 0);
        if (mode == 0) race_tok = abar_arrive(&race_bar);
        atomic_store(&race_ret, 0);
        atomic_store(&race_go, round);
        /* the waiter spins on race_go2: sweep the destroy across its entry
         * into abar_wait (it sees the store some 100 ns later) */
        while (atomic_load(&race_ready) < round) {}
        atomic_store(&race_go2, round);
        for (volatile int spin = delay; spin > 0; spin--) {}
        int d = abar_destroy(&race_bar);
        abar_t snap;
        if (d == 0) snapshot(&snap, &race_bar); /* as destroy left it: no call writes it now */
        if (d == EBUSY) {
            busy++;
            CHECK(tok_ok(abar_arrive(&race_bar)));
            delay = delay * 7 / 8;             /* the waiter was in: destroy earlier */
        } else {
            CHECK_EQ(d, 0);
            zero++;
            if (delay < 1 << 20) delay = delay * 5 / 4 + 8; /* it was not yet: destroy later */
        }
        uint64_t t0 = now_ns();
        while (atomic_load(&race_ret) == 0) {
            if (now_ns() - t0 > 2000000000u) {
                fprintf(stderr, "round %d (%d EBUSY, %d destroyed so far): destroy returned %d, "
                        "and the waiter has not returned from its wait 2 s later (it registered "
                        "after destroy's check and sleeps on the destroyed barrier; inside=%u)\n",
                        round, busy, zero, d, inside_of(&race_bar));
                _exit(1);
            }
            sched_yield();
        }
        int r = atomic_load(&race_ret) - 1000;
        if (d == 0 && memcmp(&snap, &race_bar, sizeof snap) != 0) {
            fprintf(stderr, "round %d: the barrier was written after abar_destroy returned 0 "
                    "(the wait returned %d)\n", round, r);
            _exit(1);
        }
        if (d == EBUSY) CHECK_EQ(r, 0);
        else if (mode == 3 && r == 0) {
            /* a barrier of one: the wait completed its phase before destroy */
        } else if (r != EINVAL) {
            fprintf(stderr, "round %d: wait racing a successful destroy returned %d\n", round, r);
            _exit(1);
        }
        if (d == EBUSY) CHECK_EQ(abar_destroy(&race_bar), 0);
    }
    atomic_store(&race_go, -1);
    pthread_join(w, NULL);
    printf("  destroy: %d EBUSY, %d succeeded\n", busy, zero);
}

TEST(destroy_racing_wait_entry_never_strands_waiter) { race_rounds(0); }
TEST(destroy_racing_pair_arrive_and_wait_entry) { race_rounds(1); }
TEST(destroy_racing_completion_pair_arrive_and_wait_entry) { race_rounds(2); }
TEST(destroy_racing_arrive_and_wait_on_a_barrier_of_one) { race_rounds(3); }

/* A thread looping abar_arrive_and_wait on a barrier of one (each call
 * completes a phase alone), short pauses between calls, while another
 * destroys it: destroy says EBUSY until it meets a pause, and once it has
 * said 0, the loop's next call returns EINVAL and the barrier's memory is
 * never written again.  (A barrier of one whose one-CAS path did not
 * register let the CAS and its release land after destroy returned 0.) */
static abar_t loop_bar;
static _Atomic int loop_started;
static void *one_loop(void *arg)
{
    (void)arg;
    claim_hazard_record();
    atomic_store(&loop_started, 1);
    for (;;) {
        int r = abar_arrive_and_wait(&loop_bar);
        if (r != 0) return (void *)(intptr_t)r;
        for (volatile int i = 0; i < 20000; i++) {}
    }
}
TEST(destroy_racing_a_loop_on_a_barrier_of_one)
{
    int trials = 0, busy = 0;
    for (uint64_t t_end = now_ns() + 2000000000u; now_ns() < t_end; trials++) {
        CHECK_EQ(abar_init(&loop_bar, 1, NULL), 0);
        atomic_store(&loop_started, 0);
        pthread_t th;
        pthread_create(&th, NULL, one_loop, NULL);
        while (!atomic_load(&loop_started)) {}
        for (volatile int i = 0; i < (trials % 16) * 100; i++) {}
        int d;
        while ((d = abar_destroy(&loop_bar)) == EBUSY) busy++;
        CHECK_EQ(d, 0);
        abar_t snap;
        snapshot(&snap, &loop_bar); /* as destroy left it */
        void *ret;
        pthread_join(th, &ret);
        CHECK_EQ((int)(intptr_t)ret, EINVAL);
        if (memcmp(&snap, &loop_bar, sizeof snap) != 0) {
            fprintf(stderr, "trial %d: the barrier was written after abar_destroy returned 0\n", trials);
            _exit(1);
        }
    }
    printf("  %d destroys, EBUSY %d times before them\n", trials, busy);
}

/* The same with a thread only arriving, in a loop, on a process-shared
 * barrier of two (registered by counting itself in the barrier's own
 * memory): once destroy has said 0, the barrier is never written again.
 * (A registration by fetch-and-add counted a call that had looked at the
 * barrier before the destroy into the destroyed barrier, then out.) */
static _Atomic int arrive_stop;
static void *arrive_loop(void *arg)
{
    (void)arg;
    atomic_store(&loop_started, 1);
    while (!atomic_load(&arrive_stop)) (void)abar_arrive(&loop_bar);
    return NULL;
}
TEST(destroy_racing_arrivals_on_a_pshared_barrier)
{
    int trials = 0;
    for (uint64_t t_end = now_ns() + 1000000000u; now_ns() < t_end; trials++) {
        abar_attr_t at = { NULL, NULL, ABAR_PSHARED };
        CHECK_EQ(abar_init(&loop_bar, 2, &at), 0);
        atomic_store(&loop_started, 0);
        atomic_store(&arrive_stop, 0);
        pthread_t th;
        pthread_create(&th, NULL, arrive_loop, NULL);
        while (!atomic_load(&loop_started)) {}
        int d;
        while ((d = abar_destroy(&loop_bar)) == EBUSY) {}
        CHECK_EQ(d, 0);
        abar_t snap;
        snapshot(&snap, &loop_bar); /* as destroy left it */
        for (volatile int i = 0; i < 20000; i++) {} /* the loop's calls go on, refused */
        atomic_store(&arrive_stop, 1);
        pthread_join(th, NULL);
        if (memcmp(&snap, &loop_bar, sizeof snap) != 0) {
            fprintf(stderr, "trial %d: the barrier was written after abar_destroy returned 0\n", trials);
            _exit(1);
        }
    }
    printf("  %d destroys under a loop of arrivals\n", trials);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
