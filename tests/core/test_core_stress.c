/*
 * test_core_stress.c - many threads, many phases, an invariant checked in
 * every phase (ck style), for T = 2, 4 and 8 threads under each wait policy.
 *
 * Each round every participant bumps a shared counter and writes its slot of
 * a double-buffered plain array, then arrives in one of several ways (arrive
 * + wait, arrive_and_wait, arrive + test polling, arrive + short timed waits
 * retried, arrive + long timed wait; thread 0 arrives twice per round, with
 * arrive_n(2) or two arrives).  The completion function checks that every
 * arrival of the phase is visible (counter == (T+1) * (phase+1), every slot
 * holds this round's value) and publishes a sum; after its wait each thread
 * checks the sum, every peer's slot, the counter bounds and abar_phase.
 * Two observer threads that take no part wait on abar_current() tokens and
 * check that what they are released from is really complete.  The run stops
 * after ABAR_STRESS_PHASES phases or ABAR_STRESS_MS milliseconds (defaults
 * 200000 and 1200), whichever comes first, decided in the completion so every
 * thread leaves after the same phase; the observers are then released by
 * abar_cancel.  Anything broken is printed with the phase, thread and values.
 * Under an emulator ABAR_TEST_SLOW=S (harness.h) multiplies every wall time
 * here (the default run time, the refusal and cancel runs, the long timed
 * wait) by S; the minimum number of phases a case must run does not change.
 */
#include "harness.h"
#include "abar_internal.h"
#include <abar.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum { MAXT = 8, NOBS = 2 };

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timespec ts_in(int64_t delta_ns)
{
    int64_t t = (int64_t)now_ns() + delta_ns;
    return (struct timespec){ .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };
}

static long env_long(const char *name, long dflt)
{
    const char *e = getenv(name);
    return e && *e ? atol(e) : dflt;
}

#define FAILF(...)                                                         \
    do {                                                                   \
        fprintf(stderr, __VA_ARGS__);                                      \
        fputc('\n', stderr);                                               \
        fflush(stderr);                                                    \
        _exit(1);                                                          \
    } while (0)

/* ---- shared state of one run ------------------------------------------------ */

static abar_t bar;
static int T;                      /* participants; the barrier expects T + 1 */
static uint64_t start_phase;       /* the phase the run starts at (test hook) */
static long max_phases;
static uint64_t deadline_ns;

static _Atomic long counter;       /* +1 per arrival, before it */
static long slot[2][MAXT];         /* plain: slot[r&1][i] = value(r, i) before arriving */
static long sum[2];                /* plain: written by the completion of round r */
static _Atomic long completions;   /* completions seen */
static _Atomic int stop;           /* set by the completion of the last round */
static _Atomic long timeouts, polls;

static long value(long r, int i) { return r * 131 + i * 7 + 1; }
static long want_sum(long r)
{
    long s = 0;
    for (int i = 0; i < T; i++) s += value(r, i);
    return s;
}

static void completion(void *arg)
{
    (void)arg;
    long r = (long)(abar_phase(&bar) - start_phase); /* the completing round */
    long c = atomic_load_explicit(&counter, memory_order_relaxed);
    if (c != (long)(T + 1) * (r + 1))
        FAILF("completion of round %ld (T=%d): counter %ld, want %ld: an arrival of this "
              "round is not visible, or one of the next round was counted", r, T, c,
              (long)(T + 1) * (r + 1));
    long n = atomic_load_explicit(&completions, memory_order_relaxed);
    if (n != r)
        FAILF("completion of round %ld: %ld completions ran before, want %ld", r, n, r);
    long s = 0;
    for (int i = 0; i < T; i++) {
        if (slot[r & 1][i] != value(r, i))
            FAILF("completion of round %ld: slot of thread %d holds %ld, want %ld", r, i,
                  slot[r & 1][i], value(r, i));
        s += slot[r & 1][i];
    }
    sum[r & 1] = s;
    atomic_store_explicit(&completions, n + 1, memory_order_relaxed);
    if (r + 1 >= max_phases || now_ns() >= deadline_ns) atomic_store(&stop, 1);
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Waits for token t in one of several ways; returns the wait's result. */
static int wait_some_way(abar_token_t t, unsigned how, int me, long r)
{
    int rc = 0;
    switch (how) {
    case 0: rc = abar_wait(&bar, t); break;
    case 1: { /* test polling with independent work between */
        static _Thread_local volatile unsigned work;
        while ((rc = abar_test(&bar, t)) == EBUSY) {
            for (int k = 0; k < 50; k++) work = work + (unsigned)k;
            atomic_fetch_add_explicit(&polls, 1, memory_order_relaxed);
            sched_yield();
        }
        break;
    }
    case 2: { /* short timed waits, retried: the arrival stays counted */
        for (int tries = 0;; tries++) {
            struct timespec ts = ts_in(20000 + (int64_t)(tries % 5) * 40000);
            rc = abar_wait_until(&bar, t, &ts);
            if (rc != ETIMEDOUT) break;
            atomic_fetch_add_explicit(&timeouts, 1, memory_order_relaxed);
        }
        break;
    }
    default: { /* a long timed wait that must be released, not time out */
        struct timespec ts = ts_in(10 * 1000000000LL * harness_slow());
        rc = abar_wait_until(&bar, t, &ts);
        if (rc == ETIMEDOUT)
            FAILF("round %ld, thread %d: a %d s timed wait timed out", r, me, 10 * harness_slow());
    }
    }
    return rc;
}

static void *participant(void *arg)
{
    int me = (int)(intptr_t)arg;
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1);
    for (long r = 0;; r++) {
        int mine = me == 0 ? 2 : 1;
        atomic_fetch_add_explicit(&counter, mine, memory_order_relaxed);
        slot[r & 1][me] = value(r, me);
        unsigned how = (unsigned)(xorshift(&rng) % 7);
        int rc;
        abar_token_t t;
        if (how == 6) { /* arrive_and_wait (thread 0 arrives once more first) */
            if (me == 0) {
                t = abar_arrive(&bar);
                if (abar_token_error(t)) FAILF("round %ld: arrive -> %d", r, abar_token_error(t));
            }
            rc = abar_arrive_and_wait(&bar);
        } else {
            if (me == 0 && how % 2) {
                t = abar_arrive_n(&bar, 2);
            } else if (me == 0) {
                abar_token_t t1 = abar_arrive(&bar);
                t = abar_arrive(&bar);
                if (t1.raw != t.raw || t1.id != t.id)
                    FAILF("round %ld: thread 0's two arrivals got tokens of phases %llu and %llu",
                          r, (unsigned long long)t1.raw, (unsigned long long)t.raw);
            } else {
                t = abar_arrive(&bar);
            }
            if (abar_token_error(t)) FAILF("round %ld, thread %d: arrive -> %d", r, me, abar_token_error(t));
            /* white box: the token names this round's phase */
            if (t.raw != start_phase + (uint64_t)r)
                FAILF("round %ld, thread %d: token of phase %llu, want %llu", r, me,
                      (unsigned long long)t.raw, (unsigned long long)(start_phase + (uint64_t)r));
            rc = wait_some_way(t, how % 4, me, r);
        }
        if (rc != 0) FAILF("round %ld, thread %d: wait (way %u) -> %d", r, me, how, rc);

        /* after the wait: the whole round is visible, and nothing beyond it
         * can have completed (it needs this thread's next arrival) */
        uint64_t ph = abar_phase(&bar);
        if (ph != start_phase + (uint64_t)r + 1)
            FAILF("round %ld, thread %d: abar_phase %llu after the wait, want %llu", r, me,
                  (unsigned long long)ph, (unsigned long long)(start_phase + (uint64_t)r + 1));
        long n = atomic_load_explicit(&completions, memory_order_relaxed);
        if (n != r + 1)
            FAILF("round %ld, thread %d: %ld completions visible after the wait, want %ld", r,
                  me, n, r + 1);
        if (sum[r & 1] != want_sum(r))
            FAILF("round %ld, thread %d: the completion's sum reads %ld, want %ld", r, me,
                  sum[r & 1], want_sum(r));
        for (int i = 0; i < T; i++)
            if (slot[r & 1][i] != value(r, i))
                FAILF("round %ld, thread %d: slot of thread %d reads %ld, want %ld", r, me, i,
                      slot[r & 1][i], value(r, i));
        long c = atomic_load_explicit(&counter, memory_order_relaxed);
        long lo = (long)(T + 1) * (r + 1), hi = (long)(T + 1) * (r + 2) - mine;
        if (c < lo || c > hi)
            FAILF("round %ld, thread %d: counter %ld after the wait, want %ld..%ld", r, me, c, lo, hi);
        if (atomic_load(&stop)) return (void *)(intptr_t)(r + 1);
    }
}

/* Takes no part: waits for whatever phase is current, checks it completed. */
static void *observer(void *arg)
{
    int me = (int)(intptr_t)arg;
    long released = 0;
    uint64_t last = 0;
    for (unsigned i = 0;; i++) {
        abar_token_t t = abar_current(&bar);
        int e = abar_token_error(t);
        if (e) {
            if (e != ECANCELED || !atomic_load(&stop))
                FAILF("observer %d: abar_current -> %d (stop=%d)", me, e, atomic_load(&stop));
            break;
        }
        if (t.raw < last) FAILF("observer %d: current phase went back %llu -> %llu", me,
                                (unsigned long long)last, (unsigned long long)t.raw);
        last = t.raw;
        int rc = i % 3 == 2 ? wait_some_way(t, 2, 100 + me, -1) : abar_wait(&bar, t);
        if (rc == ECANCELED) {
            if (!atomic_load(&stop)) FAILF("observer %d: ECANCELED before the run stopped", me);
            break;
        }
        if (rc != 0) FAILF("observer %d: wait -> %d", me, rc);
        long need = (long)(t.raw - start_phase) + 1;
        long n = atomic_load_explicit(&completions, memory_order_relaxed);
        uint64_t ph = abar_phase(&bar);
        if (n < need || ph <= t.raw)
            FAILF("observer %d: released from phase %llu, but %ld completions ran and "
                  "abar_phase is %llu", me, (unsigned long long)t.raw, n, (unsigned long long)ph);
        released++;
    }
    return (void *)(intptr_t)released;
}

static void run(int threads, unsigned flags, uint64_t start)
{
    T = threads;
    start_phase = start;
    max_phases = env_long("ABAR_STRESS_PHASES", 200000);
    deadline_ns = now_ns() + (uint64_t)env_long("ABAR_STRESS_MS", 1200L * harness_slow()) * 1000000u;
    atomic_store(&counter, 0);
    atomic_store(&completions, 0);
    atomic_store(&stop, 0);
    atomic_store(&timeouts, 0);
    atomic_store(&polls, 0);
    abar_attr_t at = { completion, NULL, flags };
    CHECK_EQ(abar_init(&bar, (uint32_t)T + 1, &at), 0);
    if (start) CHECK_EQ(abar__test_set_phase(&bar, start), 0);
    pthread_t th[MAXT], ob[NOBS];
    for (int i = 0; i < NOBS; i++) pthread_create(&ob[i], NULL, observer, (void *)(intptr_t)i);
    uint64_t t0 = now_ns();
    for (int i = 0; i < T; i++) pthread_create(&th[i], NULL, participant, (void *)(intptr_t)i);
    long rounds = -1;
    for (int i = 0; i < T; i++) {
        void *res;
        pthread_join(th[i], &res);
        if (rounds >= 0 && (long)(intptr_t)res != rounds)
            FAILF("threads left after different rounds: %ld and %ld", rounds, (long)(intptr_t)res);
        rounds = (long)(intptr_t)res;
    }
    double dt = (double)(now_ns() - t0) * 1e-9;
    CHECK_EQ(abar_cancel(&bar), 0); /* releases the observers */
    long released = 0;
    for (int i = 0; i < NOBS; i++) {
        void *res;
        pthread_join(ob[i], &res);
        released += (long)(intptr_t)res;
    }
    CHECK_EQ(atomic_load(&completions), rounds);
    CHECK_EQ(abar_phase(&bar), start + (uint64_t)rounds);
    CHECK_EQ(abar_destroy(&bar), 0);
    printf("  T=%d %-7s: %ld phases in %.2f s (%.0f/s), %ld observer releases, %ld timeouts, %ld polls\n",
           T, flags & ABAR_WAIT_SPIN ? "spin" : flags & ABAR_WAIT_PARK ? "park" : "default",
           rounds, dt, rounds / dt, released, atomic_load(&timeouts), atomic_load(&polls));
    /* not vacuous: a run that hardly ran checks nothing */
    if (rounds < 50) FAILF("only %ld phases ran", rounds);
}

TEST(stress_T2_default) { run(2, 0, 0); }
TEST(stress_T2_spin) { run(2, ABAR_WAIT_SPIN, 0); }
TEST(stress_T2_park) { run(2, ABAR_WAIT_PARK, 0); }
TEST(stress_T4_default) { run(4, 0, 0); }
TEST(stress_T4_spin) { run(4, ABAR_WAIT_SPIN, 0); }
TEST(stress_T4_park) { run(4, ABAR_WAIT_PARK, 0); }
TEST(stress_T8_default) { run(8, 0, 0); }
TEST(stress_T8_spin) { run(8, ABAR_WAIT_SPIN, 0); }
TEST(stress_T8_park) { run(8, ABAR_WAIT_PARK, 0); }
/* across 2^21, the state word's phase wrap (2^ST_PHASE_BITS) and the futex
 * word's 2^32 wrap */
TEST(stress_T4_default_across_2p21) { run(4, 0, (UINT64_C(1) << 21) - 500); }
TEST(stress_T4_spin_across_state_wrap) { run(4, ABAR_WAIT_SPIN, (UINT64_C(1) << ST_PHASE_BITS) - 500); }
TEST(stress_T4_park_across_2p32) { run(4, ABAR_WAIT_PARK, (UINT64_C(1) << 32) - 500); }

/* ---- drops under load --------------------------------------------------------
 * Thread i takes part in rounds 0..last[i] and leaves with arrive_and_drop in
 * its last round.  Round r expects exactly the threads with last >= r; the
 * completion checks that count; the round in which the last thread drops
 * finishes the barrier. */
enum { DT = 8 };
static abar_t dbar;
static long dlast[DT];
static _Atomic long darrivals, dcompl;
static long dexpect(long r)
{
    long n = 0;
    for (int i = 0; i < DT; i++) n += dlast[i] >= r;
    return n;
}
static void dcompletion(void *arg)
{
    (void)arg;
    long r = (long)abar_phase(&dbar);
    long a = atomic_exchange_explicit(&darrivals, 0, memory_order_relaxed);
    if (a != dexpect(r))
        FAILF("drop round %ld: %ld arrivals counted, want %ld", r, a, dexpect(r));
    atomic_fetch_add_explicit(&dcompl, 1, memory_order_relaxed);
}
static void *dworker(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (long r = 0; r <= dlast[me]; r++) {
        atomic_fetch_add_explicit(&darrivals, 1, memory_order_relaxed);
        if (r == dlast[me]) {
            int rc = abar_arrive_and_drop(&dbar);
            if (rc) FAILF("thread %d round %ld: arrive_and_drop -> %d", me, r, rc);
            return NULL;
        }
        int rc = (r + me) % 2 ? abar_arrive_and_wait(&dbar) : abar_wait(&dbar, abar_arrive(&dbar));
        if (rc) FAILF("thread %d round %ld: wait -> %d", me, r, rc);
        if (abar_phase(&dbar) != (uint64_t)r + 1)
            FAILF("thread %d round %ld: phase %llu after the wait", me, r,
                  (unsigned long long)abar_phase(&dbar));
    }
    return NULL;
}

TEST(stress_drops_T8_each_policy)
{
    const unsigned pol[3] = {0, ABAR_WAIT_SPIN, ABAR_WAIT_PARK};
    for (int rep = 0; rep < 30; rep++) {
        uint64_t rng = 0x1234567ull + (uint64_t)rep;
        long maxlast = 0;
        for (int i = 0; i < DT; i++) {
            dlast[i] = (long)(xorshift(&rng) % 300);
            if (dlast[i] > maxlast) maxlast = dlast[i];
        }
        atomic_store(&darrivals, 0);
        atomic_store(&dcompl, 0);
        abar_attr_t at = { dcompletion, NULL, pol[rep % 3] };
        CHECK_EQ(abar_init(&dbar, DT, &at), 0);
        pthread_t th[DT];
        for (int i = 0; i < DT; i++) pthread_create(&th[i], NULL, dworker, (void *)(intptr_t)i);
        for (int i = 0; i < DT; i++) pthread_join(th[i], NULL);
        CHECK_EQ(atomic_load(&dcompl), maxlast + 1);
        CHECK_EQ(abar_phase(&dbar), (uint64_t)maxlast + 1);
        /* finished */
        CHECK_EQ(abar_token_error(abar_arrive(&dbar)), ECANCELED);
        abar_token_t c = abar_current(&dbar);
        CHECK(abar_token_error(c) == ECANCELED || abar_wait(&dbar, c) == ECANCELED);
        CHECK_EQ(abar_destroy(&dbar), 0);
    }
}

/* ---- refused arrivals racing a completion ------------------------------------
 * Each completion (every phase) lets two rogue threads, which take no part,
 * try to arrive while it runs (the count is 0: every such arrival must be
 * refused with EINVAL and count nothing, through the single-arrival, the
 * arrive_n and the drop paths), and waits for both before it returns.  The
 * participants' counter invariant and the exact phase count show that no
 * refused arrival was counted, now or in a later phase. */
enum { RT = 3, ROGUES = 2 };
static abar_t rbar;
static _Atomic long rcounter, rseq, racks, rrefused;
static _Atomic int rstop;
static uint64_t rdeadline;
static void rcompletion(void *arg)
{
    (void)arg;
    if (atomic_load(&rstop) == 2) return; /* the main thread's checks after the run */
    long r = (long)abar_phase(&rbar);
    long c = atomic_load_explicit(&rcounter, memory_order_relaxed);
    if (c != RT * (r + 1)) {
        struct abar_impl *bi = (struct abar_impl *)(void *)&rbar;
        uint64_t st = atomic_load(&bi->state);
        FAILF("refusal run, completion of phase %ld: counter %ld, want %ld (an arrival of "
              "another phase was counted in this one; state: phase bits %llu, pending %d, "
              "drops %u; phase word %llu; rogue attempts so far %ld)", r, c, (long)RT * (r + 1),
              (unsigned long long)st_phase(st), (int)st_pending(st), st_drops(st),
              (unsigned long long)atomic_load(&rel(bi)->phase), atomic_load(&rrefused));
    }
    long seq = atomic_fetch_add(&rseq, 1) + 1;
    uint64_t t0 = now_ns();
    while (atomic_load(&racks) < ROGUES * seq) {
        if (now_ns() - t0 > 5000000000u * (uint64_t)harness_slow())
            FAILF("phase %ld: rogues never tried", r);
        sched_yield();
    }
    if (r + 1 >= 20000 || now_ns() >= rdeadline) atomic_store(&rstop, 1);
}
static void *rogue(void *arg)
{
    (void)arg;
    for (long seen = 0;;) {
        long q;
        while ((q = atomic_load(&rseq)) == seen) {
            if (atomic_load(&rstop) == 2) return NULL;
            sched_yield();
        }
        seen = q;
        abar_token_t a = abar_arrive(&rbar), b = abar_arrive_n(&rbar, 1), c = abar_arrive_n(&rbar, 2);
        int d = abar_arrive_and_drop(&rbar);
        if (abar_token_error(a) != EINVAL || abar_token_error(b) != EINVAL ||
            abar_token_error(c) != EINVAL || d != EINVAL)
            FAILF("arrivals during the completion of seq %ld: %d %d %d %d, want EINVAL (%d)", q,
                  abar_token_error(a), abar_token_error(b), abar_token_error(c), d, EINVAL);
        atomic_fetch_add(&rrefused, 4);
        atomic_fetch_add(&racks, 1);
    }
}
static void *rparticipant(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (long r = 0;; r++) {
        atomic_fetch_add_explicit(&rcounter, 1, memory_order_relaxed);
        int rc = (r + me) % 2 ? abar_arrive_and_wait(&rbar) : abar_wait(&rbar, abar_arrive(&rbar));
        if (rc) FAILF("refusal run, round %ld: wait -> %d", r, rc);
        if (abar_phase(&rbar) != (uint64_t)r + 1)
            FAILF("refusal run, round %ld: phase %llu", r, (unsigned long long)abar_phase(&rbar));
        if (atomic_load(&rstop)) return (void *)(intptr_t)(r + 1);
    }
}

TEST(stress_refused_arrivals_during_completion)
{
    const unsigned pol[3] = {0, ABAR_WAIT_SPIN, ABAR_WAIT_PARK};
    for (int pi = 0; pi < 3; pi++) {
        atomic_store(&rcounter, 0);
        atomic_store(&rseq, 0);
        atomic_store(&racks, 0);
        atomic_store(&rstop, 0);
        atomic_store(&rrefused, 0);
        rdeadline = now_ns() + 400000000u * (uint64_t)harness_slow();
        abar_attr_t at = { rcompletion, NULL, pol[pi] };
        CHECK_EQ(abar_init(&rbar, RT, &at), 0);
        pthread_t ro[ROGUES], th[RT];
        for (int i = 0; i < ROGUES; i++) pthread_create(&ro[i], NULL, rogue, NULL);
        for (int i = 0; i < RT; i++) pthread_create(&th[i], NULL, rparticipant, (void *)(intptr_t)i);
        long rounds = 0;
        for (int i = 0; i < RT; i++) {
            void *res;
            pthread_join(th[i], &res);
            rounds = (long)(intptr_t)res;
        }
        atomic_store(&rstop, 2);
        for (int i = 0; i < ROGUES; i++) pthread_join(ro[i], NULL);
        CHECK_EQ(abar_phase(&rbar), (uint64_t)rounds);
        CHECK_EQ(atomic_load(&rseq), rounds);
        /* the next phase still expects exactly RT (no drop was counted) */
        abar_token_t t = abar_arrive_n(&rbar, RT - 1);
        CHECK_EQ(abar_test(&rbar, t), EBUSY);
        CHECK_EQ(abar_token_error(abar_arrive_n(&rbar, 2)), EINVAL);
        CHECK_EQ(abar_token_error(abar_arrive(&rbar)), 0);
        CHECK_EQ(abar_test(&rbar, t), 0);
        CHECK_EQ(abar_destroy(&rbar), 0);
        printf("  %s: %ld phases, %ld refused arrivals during completions\n",
               pi == 0 ? "default" : pi == 1 ? "spin" : "park", rounds, atomic_load(&rrefused));
        if (rounds < 20) FAILF("only %ld phases ran", rounds);
    }
}

/* ---- refused arrivals on a cancelled barrier, racing its waiters ---------------
 * After abar_cancel, threads hammer arrivals (all refused, ECANCELED) while
 * others wait again and again on the cancelled phase: every wait returns
 * ECANCELED (never 0, never a hang), and nothing is ever counted. */
static abar_t cbar;
static abar_token_t ctok;
static _Atomic int cstop;
static _Atomic long cwaits;
static void *chammer(void *arg)
{
    (void)arg;
    while (!atomic_load(&cstop)) {
        abar_token_t a = abar_arrive(&cbar);
        if (abar_token_error(a) != ECANCELED) FAILF("arrive on a cancelled barrier -> %d", abar_token_error(a));
        if (abar_arrive_and_drop(&cbar) != ECANCELED) FAILF("drop on a cancelled barrier not refused");
    }
    return NULL;
}
static void *cwaiter(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (unsigned i = 0; !atomic_load(&cstop); i++) {
        int rc;
        if ((i + (unsigned)me) % 3 == 0) {
            struct timespec ts = ts_in(2000000000LL);
            rc = abar_wait_until(&cbar, ctok, &ts);
        } else if ((i + (unsigned)me) % 3 == 1) {
            rc = abar_wait(&cbar, ctok);
        } else {
            rc = abar_arrive_and_wait(&cbar);
        }
        if (rc != ECANCELED) FAILF("wait %u on the cancelled phase -> %d, want ECANCELED", i, rc);
        atomic_fetch_add_explicit(&cwaits, 1, memory_order_relaxed);
    }
    return NULL;
}

TEST(stress_cancelled_barrier_refusals_and_waits)
{
    const unsigned pol[3] = {0, ABAR_WAIT_SPIN, ABAR_WAIT_PARK};
    for (int pi = 0; pi < 3; pi++) {
        abar_attr_t at = { NULL, NULL, pol[pi] };
        CHECK_EQ(abar_init(&cbar, 3, &at), 0);
        ctok = abar_arrive(&cbar); /* 2 still pending */
        atomic_store(&cstop, 0);
        atomic_store(&cwaits, 0);
        CHECK_EQ(abar_cancel(&cbar), 0); /* before the threads: their arrivals are all refused */
        pthread_t h[2], w[3];
        for (int i = 0; i < 3; i++) pthread_create(&w[i], NULL, cwaiter, (void *)(intptr_t)i);
        for (int i = 0; i < 2; i++) pthread_create(&h[i], NULL, chammer, NULL);
        uint64_t t0 = now_ns();
        while (now_ns() - t0 < 250000000u * (uint64_t)harness_slow()) sched_yield();
        atomic_store(&cstop, 1);
        for (int i = 0; i < 2; i++) pthread_join(h[i], NULL);
        for (int i = 0; i < 3; i++) pthread_join(w[i], NULL);
        /* nothing counted, nothing completed */
        CHECK_EQ(abar_phase(&cbar), 0);
        CHECK_EQ(abar__test_pending(&cbar), 2);
        CHECK_EQ(abar_wait(&cbar, ctok), ECANCELED);
        CHECK_EQ(abar_destroy(&cbar), 0);
        if (atomic_load(&cwaits) < 10) FAILF("only %ld waits ran", atomic_load(&cwaits));
    }
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
