/*
 * test_core_anon.c - arrivals are anonymous (as in cuda::barrier): any
 * thread may arrive any number of times in a phase, and threads that only
 * arrive never wait.  Every arrival that returns a valid token is counted
 * in exactly one phase, and a phase completes after exactly `expected`
 * of them, so with no drop and no completion running:
 *
 *     counted arrivals = expected x completed phases + the open phase's
 *
 * and no arrival is ever refused.  Also the far and past deadlines of
 * abar_wait_until, and a cancel racing a waiter that frees the barrier.
 */
#include "core_api.h"

#include <signal.h>
#include <string.h>
#if !defined(_WIN32)
#include <sys/wait.h>
#endif
#include <unistd.h>

/* ---- anonymous over-arrival ------------------------------------------- */

struct anon {
    abar_t *b;
    _Atomic int stop;
    _Atomic uint64_t counted, refused;
    bool wait; /* arrive_and_wait (else arrive only) */
    uint32_t n;   /* > 0: every third arrival is abar_arrive_n(n), refused when fewer pend */
    _Atomic uint64_t n_refused;
};

static void *anon_thread(void *arg)
{
    struct anon *a = arg;
    uint64_t ok = 0, bad = 0, nbad = 0, i = 0;
    while (!atomic_load_explicit(&a->stop, memory_order_relaxed)) {
        if (a->n && ++i % 3 == 0) {
            abar_token_t t = abar_arrive_n(a->b, a->n);
            if (abar_token_error(t) == EINVAL) nbad++; /* fewer pending: nothing counted */
            else if (abar_token_error(t)) bad++;
            else ok += a->n;
            continue;
        }
        if (a->wait) {
            /* arrive + wait in two calls (the token tells what was counted) */
            abar_token_t t = abar_arrive(a->b);
            if (abar_token_error(t)) { bad++; continue; }
            ok++;
            /* a phase needs `expected` of the other arrivals: time out
             * rather than hang once the others have stopped */
            struct timespec ts = ts_in(200000000);
            int r = abar_wait_until(a->b, t, &ts);
            if (r != 0 && r != ETIMEDOUT) bad++;
        } else {
            abar_token_t t = abar_arrive(a->b);
            if (abar_token_error(t)) bad++;
            else ok++;
        }
    }
    atomic_fetch_add(&a->counted, ok);
    atomic_fetch_add(&a->refused, bad);
    atomic_fetch_add(&a->n_refused, nbad);
    return NULL;
}

/* Three threads on an expected-2 barrier, or arrive-only threads: for
 * `ms`, then the invariant above and a destroy that succeeds. */
static void anon_run_n(uint32_t expected, int nthreads, bool wait, int ms, unsigned flags, uint32_t n)
{
    abar_t b;
    abar_attr_t at = { NULL, NULL, flags };
    CHECK_EQ(abar_init(&b, expected, &at), 0);
    struct anon a = { .b = &b, .wait = wait, .n = n };
    pthread_t th[16];
    for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, anon_thread, &a);
    msleep(ms);
    atomic_store(&a.stop, 1);
    for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    const uint64_t phases = abar_phase(&b);
    const int32_t open = (int32_t)expected - abar__test_pending(&b);
    const uint64_t counted = atomic_load(&a.counted);
    printf("  expected %u, %d threads (%s): %llu arrivals, %llu phases, %d in the open one\n", expected,
           nthreads, wait ? "arrive+wait" : "arrive only", (unsigned long long)counted,
           (unsigned long long)phases, open);
    /* A pair never refuses (its phases complete in one CAS); a wider
     * barrier refuses arrivals that race its completion (EINVAL, nothing
     * counted: docs/reference.md) */
    if (expected <= 2) CHECK_EQ(atomic_load(&a.refused), 0);
    CHECK(phases > 0);
    CHECK(open >= 0 && open < (int32_t)expected);
    CHECK_EQ(counted, expected * phases + (uint64_t)open);
    /* quiescent: the barrier is whole, and counts on */
    for (uint32_t i = 0; i < expected - (uint32_t)open; i++) CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_phase(&b), phases + 1);
    CHECK_EQ(abar_destroy(&b), 0);
}

static void anon_run(uint32_t expected, int nthreads, bool wait, int ms, unsigned flags)
{
    anon_run_n(expected, nthreads, wait, ms, flags, 0);
}

TEST(anon_pair_three_threads_arrive_and_wait) { anon_run(2, 3, true, 1000, 0); }
/* arrive_n(2) among single arrivals on a pair: a phase it completes opens
 * the next in the same CAS, so no single arrival is ever refused */
TEST(anon_pair_arrive_n_among_single_arrivals) { anon_run_n(2, 3, false, 700, 0, 2); }
TEST(anon_pair_arrive_n_among_waiters) { anon_run_n(2, 3, true, 700, 0, 2); }
TEST(anon_pair_two_threads_arrive_only) { anon_run(2, 2, false, 1000, 0); }
TEST(anon_pair_three_threads_arrive_only_spin) { anon_run(2, 3, false, 500, ABAR_WAIT_SPIN); }
TEST(anon_one_two_threads_arrive_only) { anon_run(1, 2, false, 500, 0); }
TEST(anon_four_on_three_arrive_and_wait) { anon_run(3, 4, true, 500, 0); }
TEST(anon_eight_on_six_arrive_only) { anon_run(6, 8, false, 500, 0); }

/* abar_arrive_and_wait from more threads than expected: none is refused,
 * none is released early (a phase's waiters see every write made before
 * its arrivals: here, the phase count each waiter reads is past its token). */
static abar_t aw_b;
static _Atomic int aw_stop;
static _Atomic uint64_t aw_bad;
static void *aw_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&aw_stop)) {
        int r = abar_arrive_and_wait(&aw_b);
        if (r != 0) atomic_fetch_add(&aw_bad, 1);
    }
    return NULL;
}
TEST(anon_pair_three_threads_arrive_and_wait_one_call)
{
    CHECK_EQ(abar_init(&aw_b, 2, NULL), 0);
    pthread_t th[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, aw_thread, NULL);
    msleep(700);
    atomic_store(&aw_stop, 1);
    /* release whoever is left waiting: each arrival completes or joins a phase */
    bool joined[3] = { false, false, false };
    for (int done = 0; done < 3;) {
        (void)abar_arrive(&aw_b);
        for (int i = 0; i < 3; i++)
            if (!joined[i] && pthread_tryjoin_np(th[i], NULL) == 0) { joined[i] = true; done++; }
        sched_yield();
    }
    CHECK_EQ(atomic_load(&aw_bad), 0);
    int32_t pend = abar__test_pending(&aw_b);
    CHECK(pend == 1 || pend == 2);
    if (pend == 1) CHECK(tok_ok(abar_arrive(&aw_b)));
    CHECK_EQ(abar_destroy(&aw_b), 0);
}

/* Inside the completion, abar_phase is the completing phase, even while
 * anonymous arrivals race ahead: the completer waits for the previous
 * release before it runs the completion. */
static abar_t ph_b;
static _Atomic uint64_t ph_lag, ph_runs;
static void ph_completion(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ph_runs, 1);
    if (abar_phase(&ph_b) != abar_current(&ph_b).raw) atomic_fetch_add(&ph_lag, 1);
}
static _Atomic int ph_stop;
static void *ph_thread(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&ph_stop, memory_order_relaxed)) (void)abar_arrive(&ph_b);
    return NULL;
}
TEST(completion_sees_its_own_phase_under_anonymous_arrivals)
{
    for (uint32_t e = 2; e <= 6; e += 4) {
        abar_attr_t at = { ph_completion, NULL, 0 };
        CHECK_EQ(abar_init(&ph_b, e, &at), 0);
        atomic_store(&ph_stop, 0);
        pthread_t th[8];
        for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, ph_thread, NULL);
        msleep(400);
        atomic_store(&ph_stop, 1);
        for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
        printf("  expected %u: %llu completions, %llu saw an older abar_phase\n", e,
               (unsigned long long)atomic_load(&ph_runs), (unsigned long long)atomic_load(&ph_lag));
        CHECK(atomic_load(&ph_runs) > 0);
        CHECK_EQ(atomic_load(&ph_lag), 0);
        CHECK_EQ(abar_destroy(&ph_b), 0);
    }
}

/* ---- deadlines ---------------------------------------------------------- */

static abar_t dl_b;
static void *dl_late(void *arg)
{
    (void)arg;
    msleep(50);
    CHECK(tok_ok(abar_arrive(&dl_b)));
    return NULL;
}

/* Far deadlines (past 2^64 ns) wait as long as it takes, under every policy. */
TEST(wait_until_far_deadlines_do_not_overflow)
{
    const time_t far[] = { (time_t)18446744074LL, (time_t)1 << 62, (time_t)LONG_MAX };
    for (int k = 0; k < 3; k++)
        for (int pi = 0; pi < 3; pi++) {
            abar_attr_t at = { NULL, NULL, POLICIES[pi] };
            CHECK_EQ(abar_init(&dl_b, 2, &at), 0);
            abar_token_t t = abar_arrive(&dl_b);
            pthread_t th;
            pthread_create(&th, NULL, dl_late, NULL);
            struct timespec ts = { far[k], 0 };
            CHECK_EQ(abar_wait_until(&dl_b, t, &ts), 0);
            pthread_join(th, NULL);
            CHECK_EQ(abar_destroy(&dl_b), 0);
        }
}

/* A deadline before the epoch is past: 0 for a completed phase, else
 * ETIMEDOUT (and the arrival stays counted). */
TEST(wait_until_negative_deadline_is_past)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        abar_t b;
        CHECK_EQ(abar_init(&b, 2, &at), 0);
        struct timespec past = { -5, 0 };
        abar_token_t t = abar_arrive(&b);
        CHECK_EQ(abar_wait_until(&b, t, &past), ETIMEDOUT);
        CHECK_EQ(abar__test_pending(&b), 1);
        CHECK(tok_ok(abar_arrive(&b)));
        CHECK_EQ(abar_wait_until(&b, t, &past), 0);
        struct timespec bad = { -1, 1000000000L };
        CHECK_EQ(abar_wait_until(&b, t, &bad), EINVAL);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

/* ---- inside the completion ------------------------------------------------ */

static int in_aw, in_test;
static abar_t in_b;
static void in_completion(void *arg)
{
    (void)arg;
    in_aw = abar_arrive_and_wait(&in_b);
    in_test = abar_test(&in_b, abar_current(&in_b));
}
/* From the barrier's own completion: arrive_and_wait reports the deadlock
 * wait() reports (EDEADLK) and counts nothing; abar_test never blocks and
 * says EBUSY (the phase is not complete). */
TEST(completion_arrive_and_wait_on_own_barrier_is_edeadlk)
{
    abar_attr_t at = { in_completion, NULL, 0 };
    CHECK_EQ(abar_init(&in_b, 1, &at), 0);
    CHECK_EQ(abar_arrive_and_wait(&in_b), 0);
    CHECK_EQ(in_aw, EDEADLK);
    CHECK_EQ(in_test, EBUSY);
    CHECK_EQ(abar_phase(&in_b), 1);
    CHECK_EQ(abar__test_pending(&in_b), 1);
    CHECK_EQ(abar_destroy(&in_b), 0);
}

/* ---- cancel racing a waiter that frees the barrier ---------------------- */
#if defined(_WIN32)
TEST_NOT_HERE(cancel_does_not_touch_a_barrier_its_waiter_freed,
              "catches the fault of a use after free with a POSIX signal handler (sigaction): Windows has none")
#else

static abar_t *_Atomic cf_b;
static _Atomic int cf_ready, cf_done;
static void *cf_waiter(void *arg)
{
    (void)arg;
    abar_t *b = atomic_load(&cf_b);
    abar_token_t t = abar_arrive(b);
    atomic_store(&cf_ready, 1);
    CHECK_EQ(abar_wait(b, t), ECANCELED);
    int r;
    while ((r = abar_destroy(b)) == EBUSY) sched_yield();
    CHECK_EQ(r, 0);
    munmap(b, 4096);
    atomic_store(&cf_done, 1);
    return NULL;
}
static void cf_segv(int sig)
{
    static const char msg[] = "SIGSEGV: abar_cancel touched the barrier after a waiter it "
                              "released had destroyed and unmapped it\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) {}
    _exit(1);
}
/* A spinning waiter sees the cancel, returns ECANCELED, destroys and
 * unmaps the barrier at once (SPEC allows it): abar_cancel must not touch
 * the barrier after the waiter can see the cancel. */
TEST(cancel_does_not_touch_a_barrier_its_waiter_freed)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cf_segv;
    sigaction(SIGSEGV, &sa, NULL);
    for (int i = 0; i < 500; i++) {
        abar_t *b = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(b != MAP_FAILED);
        abar_attr_t at = { NULL, NULL, ABAR_WAIT_SPIN };
        CHECK_EQ(abar_init(b, 3, &at), 0);
        atomic_store(&cf_b, b);
        atomic_store(&cf_ready, 0);
        atomic_store(&cf_done, 0);
        pthread_t th;
        pthread_create(&th, NULL, cf_waiter, NULL);
        while (!atomic_load(&cf_ready)) sched_yield();
        CHECK_EQ(abar_cancel(b), 0);
        pthread_join(th, NULL);
        CHECK(atomic_load(&cf_done));
    }
}
#endif

/* The cancel's window, held open by hand: CANCELLED is in the state word
 * (a waiter may return ECANCELED and destroy) but the cancel has not yet
 * written the futex word.  Destroy must wait for that last write, or the
 * cancel would write freed memory. */
static abar_t dc_b;
static _Atomic int dc_rc = -1;
static void *dc_destroy(void *arg)
{
    (void)arg;
    atomic_store(&dc_rc, abar_destroy(&dc_b));
    return NULL;
}
TEST(destroy_waits_for_a_cancel_in_progress)
{
    CHECK_EQ(abar_init(&dc_b, 3, NULL), 0);
    atomic_fetch_or(&I(&dc_b)->state, ST_CANCELLED); /* the cancel's first write */
    pthread_t th;
    pthread_create(&th, NULL, dc_destroy, NULL);
    msleep(50);
    CHECK_EQ(atomic_load(&dc_rc), -1); /* still waiting for the cancel */
    atomic_fetch_or(&I(&dc_b)->wide.futex, ABAR__FUTEX_CANCELLED); /* its last write */
    pthread_join(th, NULL);
    CHECK_EQ(atomic_load(&dc_rc), 0);
}

/* fork while another thread is blocked in a wait: in the child only the
 * forking thread exists, so nothing is inside the barrier there: destroy
 * and init succeed (the waiter's hazard slot was copied, not its thread). */
#if defined(_WIN32)
TEST_NOT_HERE(fork_child_destroys_a_barrier_whose_waiter_stayed_behind, "fork: Windows has none")
#else
static abar_t fk_b;
static void *fk_waiter(void *arg)
{
    (void)arg;
    CHECK_EQ(abar_wait(&fk_b, abar_arrive(&fk_b)), 0);
    return NULL;
}
TEST(fork_child_destroys_a_barrier_whose_waiter_stayed_behind)
{
    CHECK_EQ(abar_init(&fk_b, 2, NULL), 0);
    pthread_t th;
    pthread_create(&th, NULL, fk_waiter, NULL);
    while (inside_of(&fk_b) == 0) sched_yield();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int r1 = abar_destroy(&fk_b);
        int r2 = abar_init(&fk_b, 2, NULL);
        _exit(r1 == 0 && r2 == 0 ? 0 : 10 + (r1 == EBUSY) + 2 * (r2 == EBUSY));
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    CHECK(tok_ok(abar_arrive(&fk_b)));
    pthread_join(th, NULL);
    CHECK_EQ(abar_destroy(&fk_b), 0);
}
#endif

int main(int argc, char **argv) { return harness_main(argc, argv); }
