/*
 * test_faults.c - abar under faults: signal storms during waits, a thread
 * cancelled (pthread_cancel) outside abar and one with a cancel pending
 * while it waits, phase counters near the wrap-around of every field
 * narrower than 64 bits, thousands of live barriers, init/destroy cycles on
 * the same memory, and processes that die mid-phase on an ABAR_PSHARED
 * barrier.  Every case forks (harness.h) and has a time limit.
 */
#include "harness.h"
#include "abar_internal.h"

#include <abar.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

static struct timespec in_ns(long ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ns / 1000000000;
    ts.tv_nsec += ns % 1000000000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_nsec -= 1000000000; ts.tv_sec++; }
    return ts;
}

/* ---- signals ------------------------------------------------------------- */
static _Atomic long signals_seen;
static void on_usr1(int sig) { (void)sig; atomic_fetch_add(&signals_seen, 1); }

struct storm { abar_t *b; abar_token_t t; int how; _Atomic int *last_arrived; int result; int early; };

static void *storm_waiter(void *p)
{
    struct storm *s = p;
    if (s->how == 0) s->result = abar_wait(s->b, s->t);
    else {
        struct timespec ts = in_ns(5000000000L);
        s->result = abar_wait_until(s->b, s->t, &ts);
    }
    s->early = !atomic_load(s->last_arrived); /* released before the last arrival? */
    return NULL;
}

/* A storm of signals (no SA_RESTART) at waiters of each policy: no EINTR,
 * no early return. */
TEST(signal_storm_during_waits)
{
    struct sigaction sa = { 0 };
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
    static const unsigned pol[] = { 0, ABAR_WAIT_SPIN, ABAR_WAIT_PARK };
    long sent = 0;
    for (int p = 0; p < 3; p++) {
        enum { W = 3 };
        abar_t b;
        abar_attr_t attr = { NULL, NULL, pol[p] };
        CHECK_EQ(abar_init(&b, W + 1, &attr), 0);
        _Atomic int last = 0;
        struct storm s[W];
        pthread_t th[W];
        for (int i = 0; i < W; i++) {
            s[i] = (struct storm){ &b, abar_arrive(&b), i % 2, &last, -1, 0 };
            CHECK_EQ(abar_token_error(s[i].t), 0);
            CHECK_EQ(pthread_create(&th[i], NULL, storm_waiter, &s[i]), 0);
        }
        double t0 = harness_now();
        while (harness_now() - t0 < 0.3) {
            for (int i = 0; i < W; i++) { pthread_kill(th[i], SIGUSR1); sent++; }
            usleep(50);
        }
        atomic_store(&last, 1);
        abar_arrive(&b);
        for (int i = 0; i < W; i++) {
            CHECK_EQ(pthread_join(th[i], NULL), 0);
            CHECK_EQ(s[i].result, 0);
            CHECK_EQ(s[i].early, 0);
        }
        CHECK_EQ(abar_destroy(&b), 0);
    }
    CHECK(atomic_load(&signals_seen) > 100);
    printf("  signals sent %ld, delivered %ld\n", sent, atomic_load(&signals_seen));
}

/* ---- thread cancellation ------------------------------------------------- */
struct canc { abar_t *b; _Atomic long rounds; };

static void drop_on_cancel(void *p) { abar_arrive_and_drop(((struct canc *)p)->b); }

static void *cancellable_worker(void *p)
{
    struct canc *c = p;
    pthread_cleanup_push(drop_on_cancel, c);
    for (;;) {
        if (abar_arrive_and_wait(c->b) != 0) break;
        atomic_fetch_add(&c->rounds, 1);
        usleep(100); /* a cancellation point outside abar */
    }
    pthread_cleanup_pop(0);
    return NULL;
}

/* A participant killed by pthread_cancel while outside abar (in usleep) drops
 * out from its cleanup handler: the others go on, nothing is lost, destroy
 * works (no registration of it remains). */
TEST(pthread_cancel_outside_abar)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    struct canc c = { &b, 0 };
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, cancellable_worker, &c), 0);
    for (int i = 0; i < 200; i++) CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK_EQ(pthread_cancel(th), 0);
    /* it may be blocked in abar (not a cancellation point) until we arrive */
    void *ret;
    while (pthread_tryjoin_np(th, &ret) == EBUSY) CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK(ret == PTHREAD_CANCELED);
    /* its cleanup dropped it: we are alone now (or it dropped in our phase) */
    uint64_t ph = abar_phase(&b);
    for (int i = 0; i < 100; i++) CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK_EQ(abar_phase(&b), ph + 100);
    CHECK_EQ(abar_destroy(&b), 0);
}

static void *wait_then_testcancel(void *p)
{
    struct storm *s = p;
    s->result = abar_wait(s->b, s->t);
    s->early = !atomic_load(s->last_arrived);
    pthread_testcancel();
    return NULL;
}

/* Waits are not cancellation points: a cancel sent to a blocked waiter takes
 * effect only at its next cancellation point, after the wait returned 0. */
TEST(pthread_cancel_pending_during_wait)
{
    static const unsigned pol[] = { 0, ABAR_WAIT_PARK };
    for (int p = 0; p < 2; p++) {
        abar_t b;
        abar_attr_t attr = { NULL, NULL, pol[p] };
        CHECK_EQ(abar_init(&b, 2, &attr), 0);
        _Atomic int last = 0;
        struct storm s = { &b, abar_arrive(&b), 0, &last, -1, 0 };
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, wait_then_testcancel, &s), 0);
        usleep(20000);
        CHECK_EQ(pthread_cancel(th), 0);
        usleep(50000);
        CHECK_EQ(pthread_tryjoin_np(th, NULL), EBUSY); /* still waiting */
        atomic_store(&last, 1);
        abar_arrive(&b);
        void *ret;
        CHECK_EQ(pthread_join(th, &ret), 0);
        CHECK(ret == PTHREAD_CANCELED);
        CHECK_EQ(s.result, 0);
        CHECK_EQ(s.early, 0);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

/* ---- wrap-around --------------------------------------------------------- */
struct wrap { abar_t *b; int phases; int bad; };
static void *wrap_partner(void *p)
{
    struct wrap *w = p;
    for (int i = 0; i < w->phases; i++) {
        abar_token_t t = abar_arrive(w->b);
        if (abar_token_error(t) || abar_wait(w->b, t) != 0) w->bad++;
    }
    return NULL;
}

/* Phases crossing 2^ST_PHASE_BITS (the state word's phase field), 2^21, 2^32 (the futex
 * word) and 2^63: tokens, abar_phase and waits stay exact, parked and spinning. */
TEST(phase_wrap_around)
{
    static const uint64_t starts[] = { (UINT64_C(1) << ST_PHASE_BITS) - 3, (1u << 21) - 3, (UINT64_C(1) << 32) - 3,
                                       (UINT64_C(1) << 63) - 3 };
    static const unsigned pol[] = { 0, ABAR_WAIT_SPIN, ABAR_WAIT_PARK };
    for (unsigned k = 0; k < sizeof starts / sizeof *starts; k++)
        for (int p = 0; p < 3; p++) {
            abar_t b;
            abar_attr_t attr = { NULL, NULL, pol[p] };
            CHECK_EQ(abar_init(&b, 2, &attr), 0);
            CHECK_EQ(abar__test_set_phase(&b, starts[k]), 0);
            CHECK_EQ(abar_phase(&b), starts[k]);
            struct wrap w = { &b, 6, 0 };
            pthread_t th;
            CHECK_EQ(pthread_create(&th, NULL, wrap_partner, &w), 0);
            abar_token_t first = { 0, 0 };
            for (int i = 0; i < 6; i++) {
                if (i % 2) usleep(200); /* let the partner park sometimes */
                abar_token_t t = abar_arrive(&b);
                CHECK_EQ(abar_token_error(t), 0);
                CHECK(t.raw == starts[k] + (uint64_t)i);
                if (i == 0) first = t;
                CHECK_EQ(abar_wait(&b, t), 0);
                CHECK(abar_phase(&b) >= starts[k] + (uint64_t)i + 1);
            }
            CHECK_EQ(pthread_join(th, NULL), 0);
            CHECK_EQ(w.bad, 0);
            CHECK(abar_phase(&b) == starts[k] + 6);
            CHECK_EQ(abar_test(&b, first), 0);          /* a completed phase: 0 at once */
            abar_token_t forged = first;
            forged.raw = starts[k] + 7;                  /* a phase no arrive returned */
            CHECK_EQ(abar_wait(&b, forged), EINVAL);
            CHECK_EQ(abar_destroy(&b), 0);
        }
}

/* ---- many barriers, init/destroy cycles ------------------------------------ */
enum { MANY = 5000 };
struct many { abar_t *bars; abar_token_t *tok; int bad; };
static void *many_partner(void *p)
{
    struct many *m = p;
    for (int i = 0; i < MANY; i++) {
        abar_token_t t = abar_arrive(&m->bars[i]);
        if (abar_token_error(t) || abar_wait(&m->bars[i], t) != 0) m->bad++;
    }
    return NULL;
}

/* 5000 barriers live at once, waited on in one order by one thread while
 * another arrives on all of them first. */
TEST(thousands_of_live_barriers)
{
    struct many m = { NULL, NULL, 0 };
    CHECK(posix_memalign((void **)&m.bars, 64, MANY * sizeof(abar_t)) == 0);
    m.tok = calloc(MANY, sizeof *m.tok);
    CHECK(m.tok != NULL);
    for (int i = 0; i < MANY; i++) CHECK_EQ(abar_init(&m.bars[i], 2, NULL), 0);
    for (int i = 0; i < MANY; i++) {
        m.tok[i] = abar_arrive(&m.bars[i]);
        CHECK_EQ(abar_token_error(m.tok[i]), 0);
    }
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, many_partner, &m), 0);
    for (int i = MANY - 1; i >= 0; i--) CHECK_EQ(abar_wait(&m.bars[i], m.tok[i]), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(m.bad, 0);
    for (int i = 0; i < MANY; i++) {
        CHECK_EQ(abar_phase(&m.bars[i]), 1);
        CHECK_EQ(abar_wait(&m.bars[(i + 1) % MANY], m.tok[i]), EINVAL); /* another's token */
    }
    for (int i = 0; i < MANY; i++) CHECK_EQ(abar_destroy(&m.bars[i]), 0);
    free(m.tok);
    free(m.bars);
}

/* 20000 init/use/destroy cycles on the same memory: a token of an earlier
 * incarnation is refused every time. */
TEST(init_destroy_cycles_same_memory)
{
    abar_t b;
    abar_token_t old = { 0, 0 };
    for (int i = 0; i < 20000; i++) {
        abar_attr_t attr = { NULL, NULL, (unsigned)(i % 3 == 0 ? 0 : i % 3 == 1 ? ABAR_WAIT_SPIN : ABAR_WAIT_PARK) };
        CHECK_EQ(abar_init(&b, 1 + i % 3, &attr), 0);
        if (i) CHECK_EQ(abar_wait(&b, old), EINVAL);
        abar_token_t t = abar_arrive_n(&b, 1 + i % 3);
        CHECK_EQ(abar_token_error(t), 0);
        CHECK_EQ(abar_wait(&b, t), 0);
        CHECK_EQ(abar_phase(&b), 1);
        old = t;
        CHECK_EQ(abar_destroy(&b), 0);
        CHECK_EQ(abar_destroy(&b), EINVAL);
    }
}

/* ---- a process dies mid-phase on a process-shared barrier ------------------ */
struct shm { abar_t bar; _Atomic int ready; _Atomic int data[4]; };

/* Three processes (expected 4: we count twice); in phase 1 one is SIGKILLed:
 * before arriving (mode 0), after arriving without waiting (1), or blocked
 * in a wait (2).  The
 * survivors' timed waits expire, one cancels, the other's wait says
 * ECANCELED, and nothing done before is lost: phase 0 stays complete, its
 * data is intact, the arrivals of phase 1 stay counted (the phase does not
 * complete). */
TEST(pshared_process_dies_mid_phase)
{
    for (int mode = 0; mode < 3; mode++) {
        struct shm *m = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        CHECK(m != MAP_FAILED);
        abar_attr_t attr = { NULL, NULL, ABAR_PSHARED };
        CHECK_EQ(abar_init(&m->bar, 4, &attr), 0);  /* we count twice */
        pid_t victim = fork();
        CHECK(victim >= 0);
        if (victim == 0) {
            atomic_store(&m->data[1], 11);
            if (abar_arrive_and_wait(&m->bar) != 0) _exit(3);          /* phase 0 */
            prctl(PR_SET_PDEATHSIG, SIGKILL);                       /* never outlive the test */
            if (mode >= 1) {
                abar_token_t t = abar_arrive(&m->bar);               /* phase 1 */
                atomic_store(&m->ready, 1);
                if (mode == 2) abar_wait(&m->bar, t);               /* killed in here */
            }
            atomic_store(&m->ready, 1);
            for (;;) pause();                                       /* or here */
        }
        pid_t survivor = fork();
        CHECK(survivor >= 0);
        if (survivor == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            atomic_store(&m->data[2], 22);
            if (abar_arrive_and_wait(&m->bar) != 0) _exit(3);
            abar_token_t t = abar_arrive(&m->bar);
            if (abar_token_error(t)) _exit(4);
            struct timespec ts = in_ns(100000000);
            if (abar_wait_until(&m->bar, t, &ts) != ETIMEDOUT) _exit(5);
            int r = abar_wait(&m->bar, t);                          /* until the cancel */
            _exit(r == ECANCELED ? 0 : 6);
        }
        atomic_store(&m->data[0], 1);
        abar_token_t t0 = abar_arrive_n(&m->bar, 2);                /* phase 0: 2 + 1 + 1 */
        CHECK_EQ(abar_wait(&m->bar, t0), 0);
        CHECK_EQ(atomic_load(&m->data[1]) + atomic_load(&m->data[2]), 33);
        abar_token_t t = abar_arrive(&m->bar);                      /* phase 1 */
        CHECK_EQ(abar_token_error(t), 0);
        while (!atomic_load(&m->ready)) usleep(1000);              /* it has left phase 0 */
        if (mode == 2) usleep(20000);                               /* let it block */
        CHECK_EQ(kill(victim, SIGKILL), 0);
        int st;
        CHECK_EQ(waitpid(victim, &st, 0), victim);
        CHECK(WIFSIGNALED(st));
        struct timespec ts = in_ns(150000000);
        CHECK_EQ(abar_wait_until(&m->bar, t, &ts), ETIMEDOUT);      /* the phase cannot complete */
        CHECK_EQ(abar_phase(&m->bar), 1);                           /* phase 0 kept, 1 not done */
        CHECK_EQ(abar_test(&m->bar, t), EBUSY);
        usleep(150000);                                             /* the survivor times out too */
        CHECK_EQ(abar_cancel(&m->bar), 0);
        CHECK_EQ(waitpid(survivor, &st, 0), survivor);
        CHECK(WIFEXITED(st));
        CHECK_EQ(WEXITSTATUS(st), 0);
        CHECK_EQ(abar_wait(&m->bar, t), ECANCELED);
        CHECK_EQ(abar_phase(&m->bar), 1);                           /* nothing lost, nothing invented */
        CHECK_EQ(atomic_load(&m->data[0]) + atomic_load(&m->data[1]) + atomic_load(&m->data[2]), 34);
        if (mode < 2) {
            CHECK_EQ(abar_destroy(&m->bar), 0);                     /* then a fresh barrier */
            CHECK_EQ(abar_init(&m->bar, 1, &attr), 0);
            CHECK_EQ(abar_arrive_and_wait(&m->bar), 0);
            CHECK_EQ(abar_destroy(&m->bar), 0);
        } else {
            /* finding F3 (docs/reliability.md): the dead waiter's registration
             * in `inside` stays, so destroy says EBUSY; the memory can still be
             * unmapped.  Recorded here so that a change is noticed. */
            int r = abar_destroy(&m->bar);
            printf("  mode 2: destroy after a waiter died inside: %s\n", r == 0 ? "0" : strerror(r));
        }
        munmap(m, sizeof *m);
    }
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
