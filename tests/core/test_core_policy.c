/*
 * test_core_policy.c - the host-wide wait policy (policy.c): waiters whose
 * spins do not pay, because phases stall for milliseconds or because their
 * CPU is taken while they spin, park soon; and spin again once that stops.
 */
#include "core_api.h"
#include "policy.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static uint64_t thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pin0(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
}

static abar_t sb;
static struct abar_impl *lean_impl(void);
static _Atomic unsigned late_ms; /* the peer's delay before each arrival */

/* arrives (intptr_t)arg times, each late_ms late */
static void *late_peer(void *arg)
{
    for (intptr_t i = 0; i < (intptr_t)arg; i++) {
        usleep(atomic_load(&late_ms) * 1000u);
        CHECK_EQ(abar_arrive_and_wait(&sb), 0);
    }
    return NULL;
}

/* Phases that each stall 5 ms (a peer arrives late, every time), with a
 * spin budget of 400 µs: after a few, the waiter no longer spends its
 * budget on them (2 ms a wait: five times the base after a release that
 * woke sleepers) but spins only as long as a wake-up takes and parks: the
 * median CPU time of the last eight waits is under 1 ms (a wake-up under
 * ThreadSanitizer on a loaded 2-CPU host: tens of µs). */
TEST(stalled_phases_make_waiters_park_soon)
{
    CHECK_EQ(setenv("ABAR_SPIN_NS", "400000", 1), 0); /* read once, in this forked case */
    CHECK_EQ(abar_init(&sb, 2, NULL), 0);
    atomic_store(&late_ms, 5);
    enum { N = 16 };
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, late_peer, (void *)(intptr_t)N), 0);
    uint64_t cpu[N];
    bool stretch = false; /* seen on after a wait (one lasts 50 ms: it may be over at the end) */
    for (unsigned i = 0; i < N; i++) {
        const uint64_t c0 = thread_cpu();
        CHECK_EQ(abar_arrive_and_wait(&sb), 0);
        cpu[i] = thread_cpu() - c0;
        stretch |= abar__park_soon();
    }
    CHECK_EQ(pthread_join(th, NULL), 0);
    uint64_t last[8];
    memcpy(last, cpu + N - 8, sizeof last);
    for (unsigned a = 1; a < 8; a++)
        for (unsigned k = a; k > 0 && last[k] < last[k - 1]; k--) {
            const uint64_t t = last[k];
            last[k] = last[k - 1];
            last[k - 1] = t;
        }
    const uint64_t med = (last[3] + last[4]) / 2;
    if (med >= 1000000u) {
        fprintf(stderr, "median CPU of the last 8 waits on 5 ms stalls: %llu ns:", (unsigned long long)med);
        for (unsigned i = 0; i < N; i++) fprintf(stderr, " %llu", (unsigned long long)cpu[i]);
        fputc('\n', stderr);
        _exit(1);
    }
    CHECK(stretch);
    /* the lab's count (policy.h) saw the signs and the stretch */
    uint64_t tally[ABAR__T_N];
    abar__policy_tally(tally);
    CHECK(tally[ABAR__T_SIGNS] >= ABAR__SIGNS);
    CHECK(tally[ABAR__T_STRETCHES] >= 1);
    CHECK_EQ(abar_destroy(&sb), 0);
}

/* A waiter that spins while another thread takes its CPU (both pinned to
 * CPU 0, the waiter at nice 19, the other burning 1 ms of every 2; the
 * spin budget 200 ms through ABAR_SPIN_NS) sees its clock jump whenever
 * that thread runs: after a few jumps waiters park soon, so the next wait,
 * 20 ms long, burns under 6 ms (spinning through, it burnt 13.7-16.7 ms; 3.9 ms on a loaded 2-CPU host). */
static _Atomic int hog_quit;
static void *hog(void *arg)
{
    (void)arg;
    pin0();
    while (!atomic_load_explicit(&hog_quit, memory_order_relaxed)) {
        const uint64_t t0 = now_ns();
        while (now_ns() - t0 < 1000000u) {}
        usleep(1000);
    }
    return NULL;
}

/* one try: the CPU shared for 60 ms, then a wait of 20 ms; its CPU time */
static uint64_t shared_then_wait(void)
{
    atomic_store(&late_ms, 60);
    atomic_store(&hog_quit, 0);
    pthread_t th, hg;
    CHECK_EQ(pthread_create(&hg, NULL, hog, NULL), 0);
    CHECK_EQ(pthread_create(&th, NULL, late_peer, (void *)(intptr_t)1), 0);
    CHECK_EQ(abar_arrive_and_wait(&sb), 0); /* 60 ms, sharing CPU 0 with the hog */
    atomic_store(&hog_quit, 1);
    CHECK_EQ(pthread_join(hg, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    atomic_store(&late_ms, 20);
    CHECK_EQ(pthread_create(&th, NULL, late_peer, (void *)(intptr_t)1), 0);
    const uint64_t c0 = thread_cpu();
    CHECK_EQ(abar_arrive_and_wait(&sb), 0); /* 20 ms, CPU 0 ours */
    const uint64_t c = thread_cpu() - c0;
    CHECK_EQ(pthread_join(th, NULL), 0);
    return c;
}

/* The scheduler decides when the hog runs: three tries, one must pass. */
TEST(taken_cpu_makes_waiters_park_soon)
{
    CHECK_EQ(setenv("ABAR_SPIN_NS", "200000000", 1), 0); /* read once, in this forked case */
    SKIP_IF(abar_ncpu() < 2, "one CPU: every wait of two is oversubscribed, and yields");
    pin0();
    CHECK_EQ(setpriority(PRIO_PROCESS, (id_t)gettid(), 19), 0);
    CHECK_EQ(abar_init(&sb, 2, NULL), 0);
    uint64_t c[3];
    unsigned k = 0;
    for (; k < 3; k++) {
        c[k] = shared_then_wait();
        if (c[k] < 6000000u) break; /* spinning through: 13.7-16.7 ms */
        atomic_store(&abar__calm_until, 0);
        msleep(100); /* a later stretch starts afresh */
    }
    if (k == 3) {
        fprintf(stderr, "a 20 ms wait after the CPU was shared burnt %llu, %llu, %llu us\n",
                (unsigned long long)c[0] / 1000, (unsigned long long)c[1] / 1000,
                (unsigned long long)c[2] / 1000);
        _exit(1);
    }
    CHECK_EQ(abar_destroy(&sb), 0);
}

/* White box: the stretch's rule (policy.c).  Two signs say nothing, a
 * third within the window starts a stretch of 50 ms; signs too small
 * (a clock jump under 50 µs, a release under 1 ms after the park, a wake
 * older than the park) are none; after the stretch, waiters spin again;
 * signs right after it start one twice as long. */
TEST(park_soon_stretch_rule)
{
    CHECK(!abar__park_soon());
    uint64_t now = abar__now_ns();
    abar__spin_gap(now, ABAR__GAP_NS - 1); /* none */
    abar__spin_slept(now, now + ABAR__STALL_NS - 1, now); /* none */
    abar__spin_slept(now, now - 1, now); /* none: a wake before the park */
    abar__spin_gap(now, ABAR__GAP_NS);
    abar__spin_slept(now - 2000000, now, now);
    CHECK(!abar__park_soon());
    now = abar__now_ns();
    abar__spin_gap(now, 10 * ABAR__GAP_NS);
    CHECK(abar__park_soon());
    uint64_t until = atomic_load(&abar__calm_until);
    CHECK(until >= now + ABAR__CALM_NS && until <= abar__now_ns() + ABAR__CALM_NS);
    while (abar__now_ns() < until) msleep(5);
    CHECK(!abar__park_soon()); /* over: spin again */
    CHECK_EQ(atomic_load(&abar__calm_until), 0);
    /* the signs come back at once: twice as long */
    for (unsigned i = 0; i < ABAR__SIGNS; i++) abar__spin_gap(now = abar__now_ns(), ABAR__GAP_NS);
    until = atomic_load(&abar__calm_until);
    CHECK(until >= now + 2ull * ABAR__CALM_NS && until <= abar__now_ns() + 2ull * ABAR__CALM_NS);
    /* signs spaced wider than the window never start one */
    atomic_store(&abar__calm_until, 0);
    for (unsigned i = 0; i < ABAR__SIGNS; i++)
        abar__spin_gap(abar__now_ns() + (uint64_t)i * 2 * ABAR__SIGN_WINDOW_NS, ABAR__GAP_NS);
    CHECK(!abar__park_soon());
}

/* White box: a stretch must pay (policy.c).  A thread's phases go at 1
 * per µs while it spins; then a stretch in which they go 10 times faster:
 * once it ends, signs start another; then one in which they go 100 times
 * slower: once it ends, the signs that follow are ignored (for 50 ms).
 * (Factors this large: a loaded machine stretches the 100 µs steps.) */
static uint64_t fake_raw;
static char fake_b; /* the barrier the samples name */
static void phases_every(bool soon, uint64_t per_call, unsigned calls, uint64_t call_ns)
{
    for (unsigned i = 0; i < calls; i++) {
        fake_raw += per_call;
        abar__spin_phase(&fake_b, fake_raw, soon);
        const uint64_t t0 = abar__now_ns();
        while (abar__now_ns() - t0 < call_ns) {}
    }
}
static void phases(bool soon, uint64_t per_call, unsigned calls)
{
    phases_every(soon, per_call, calls, 100000u); /* 100 µs a call */
}
static void signs_now(void)
{
    for (unsigned i = 0; i < ABAR__SIGNS; i++) abar__spin_gap(abar__now_ns(), ABAR__GAP_NS);
}
static void stretch_ends(void)
{
    const uint64_t until = atomic_load(&abar__calm_until);
    while (abar__now_ns() < until) msleep(5);
    CHECK(!abar__park_soon()); /* over, judged */
}
enum { CALLS = 1 + 8 * ABAR__RATE_WAITS }; /* 64 waits over 6.4 ms: a rate */
TEST(park_soon_stretch_must_pay)
{
    phases(false, 100, CALLS);
    signs_now();
    CHECK(abar__park_soon());
    phases(true, 1000, CALLS); /* faster: it paid */
    stretch_ends();
    phases(false, 100, CALLS);
    signs_now();
    CHECK(abar__park_soon());
    phases(true, 1, CALLS); /* 100 times slower */
    stretch_ends();
    signs_now();
    CHECK(!abar__park_soon()); /* ignored */
    msleep(ABAR__CALM_NS / 1000000 + 10); /* and heard again after that */
    const uint64_t now = abar__now_ns();
    signs_now();
    CHECK(abar__park_soon());
    /* the try that follows a stretch that did not pay is a short one */
    CHECK(atomic_load(&abar__calm_until) <= abar__now_ns() + ABAR__CALM_NS);
    CHECK(atomic_load(&abar__calm_until) >= now + ABAR__CALM_NS);
}

/* White box: where spinning works, few waits outlive the first spin, far
 * apart: a spinning stretch whose only samples are those of four threads,
 * each three waits 2 ms apart, still measures its rate, and a stretch 100
 * times slower is found not to pay.  (Handed over only in counts of 8
 * waits, none of the threads' counts would reach the sums: the signs after
 * the bad stretch would start another.) */
static void *sparse_waits(void *arg)
{
    (void)arg;
    phases_every(false, 10000, 3, 2000000u);
    return NULL;
}
TEST(park_soon_stretch_judged_from_sparse_spin_waits)
{
    for (int k = 0; k < 4; k++) {
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, sparse_waits, NULL), 0);
        pthread_join(th, NULL);
    }
    signs_now();
    CHECK(abar__park_soon());
    phases(true, 1, CALLS);
    stretch_ends();
    phases(false, 100, 2);
    signs_now();
    CHECK(!abar__park_soon()); /* ignored: the stretch did not pay */
}

/* White box: a spinning stretch too short to sample (signs came back at
 * once) leaves the rate measured before it standing: the stretch after it,
 * 100 times slower than that, is still found not to pay. */
TEST(park_soon_stretch_judged_by_last_spin_rate)
{
    phases(false, 100, CALLS);
    signs_now();
    phases(true, 1000, CALLS); /* paid */
    stretch_ends();
    signs_now(); /* at once: no spin samples between */
    CHECK(abar__park_soon());
    phases(true, 1, CALLS);
    stretch_ends();
    signs_now();
    CHECK(!abar__park_soon());
}

/* White box: a thread that turns from one barrier to another hands over
 * what it counted on the first, however short, so a stretch's rate is not
 * made of the long counts alone.  Spinning, barrier A runs one phase per
 * 100 µs with a 3 ms stall every fifth; inside the stretch, one per 50 µs
 * with a 1.5 ms stall every fifth: twice as fast, it paid.  Inside it the
 * thread also waits on barrier B after one A phase in three, which ends
 * its A count; the A counts that reach 1 ms are the stalled ones, so a
 * rate of those alone reads the stretch twice as slow as spinning. */
static char other_b;
static void a_phase(bool soon, unsigned i, uint64_t *raw_b, bool with_b)
{
    const uint64_t step = soon ? 50000u : 100000u, stall = i % 5 == 4 ? 30 * step : 0;
    const uint64_t t = abar__now_ns();
    fake_raw += 1;
    abar__spin_phase(&fake_b, fake_raw, soon);
    while (abar__now_ns() < t + step / 2 + stall) {}
    *raw_b += 1;
    if (with_b) abar__spin_phase(&other_b, *raw_b, soon);
    while (abar__now_ns() < t + step + stall) {}
}
TEST(park_soon_stretch_counts_short_samples_too)
{
    uint64_t raw_b = 0;
    for (unsigned i = 0; i < 200; i++) a_phase(false, i, &raw_b, false);
    signs_now();
    CHECK(abar__park_soon());
    const uint64_t until = atomic_load(&abar__calm_until);
    for (unsigned i = 0; abar__now_ns() < until; i++) a_phase(true, i, &raw_b, i % 3 == 0);
    stretch_ends();
    signs_now();
    CHECK(abar__park_soon()); /* heard: the stretch paid */
}

/* White box: a count still open when its stretch closed is dropped, not
 * handed into the next stretch's sums: a stretch's last four waits, very
 * fast, would otherwise make the next stretch, 100 times slower than
 * spinning, read as paying. */
TEST(park_soon_count_of_a_closed_stretch_dropped)
{
    phases(false, 100, CALLS);
    signs_now();
    CHECK(abar__park_soon());
    phases(true, 1000000, 5); /* four waits: less than a count */
    stretch_ends();
    signs_now();
    CHECK(abar__park_soon());
    phases(true, 1, CALLS);
    stretch_ends();
    signs_now();
    CHECK(!abar__park_soon()); /* ignored: it did not pay */
}

/* White box: a phase number may jump by any amount (abar_token_at, a
 * barrier reused): the rate of such counts saturates, with no overflow
 * (UBSan's float-cast-overflow fails the conversion it would be). */
TEST(park_soon_rate_of_huge_phase_jumps)
{
    phases(false, 1ull << 56, CALLS);
    signs_now();
    CHECK(abar__park_soon());
    phases(true, 1ull << 56, CALLS);
    stretch_ends();
    /* and the spinning since a series' first sign */
    for (unsigned k = 0; k < ABAR__SIGNS; k++) {
        abar__spin_gap(abar__now_ns(), ABAR__GAP_NS);
        if (k + 1 < ABAR__SIGNS) phases_every(false, 1ull << 56, 5, 1000000u);
    }
}

/* Spinning where it works: a barrier's phases at 1 per 2 µs, every wait
 * ending in its first spin (one in 64 a sample), 8 ms. */
static void quiet_spinning(void)
{
    CHECK_EQ(abar_init(&sb, 2, NULL), 0);
    uint64_t raw = 0;
    for (unsigned i = 0; i < ABAR__LEAN_EVERY * CALLS; i++) {
        abar__spin_lean_waited(lean_impl(), ++raw);
        const uint64_t t0 = abar__now_ns();
        while (abar__now_ns() - t0 < 2000u) {}
    }
}

/* White box: where spinning works, nearly every wait ends in its first
 * spin: one in 64 of those is a sample, so spinning has a rate (here
 * 1 phase per 2 µs, from those waits alone), and a stretch 50 times
 * slower than that ends once a rate's worth of its samples and 10 ms say
 * so, well before its 50 ms, judged as not paying: the signs after it are
 * ignored. */
TEST(park_soon_stretch_far_worse_ends_early)
{
    quiet_spinning();
    const uint64_t start = abar__now_ns();
    signs_now();
    CHECK(abar__park_soon());
    const uint64_t until = atomic_load(&abar__calm_until);
    phases(true, 1, 30); /* 3 ms: a rate's worth, but the first look is 10 ms long */
    if (abar__now_ns() < start + ABAR__EARLY_NS) CHECK(abar__park_soon());
    while (abar__park_soon() && abar__now_ns() < until) phases(true, 1, 1);
    CHECK(abar__now_ns() < until);
    CHECK(abar__now_ns() >= start + ABAR__EARLY_NS);
    CHECK(!abar__park_soon()); /* over already */
    signs_now();
    CHECK(!abar__park_soon()); /* ignored: it did not pay */
    CHECK_EQ(abar_destroy(&sb), 0);
}

/* White box: a host that takes CPUs in bursts.  Quiet, phases go at 1
 * per 2 µs, every wait ending in its first spin (one in 64 a sample); then
 * a burst: the signs come one by one, and between them spinning phases
 * stall, 1 per ms.  The stretch they start parks at 1 phase per 200 µs:
 * 100 times slower than the quiet spinning, 5 times faster than the
 * spinning in the burst, which is what it is judged against: it runs past
 * the early verdict's 10 ms, and is judged as paying (the next signs are
 * heard).  A loaded machine can stretch the steps of one part and not the
 * other's: each verdict is checked against the rates the test's own clock
 * measured, with a margin (an early end needs the stretch 3 times slower
 * by that clock; "paid" is expected where it went 1.2 times faster). */
TEST(park_soon_stretch_judged_against_the_spinning_in_the_burst)
{
    quiet_spinning();
    const uint64_t b0 = abar__now_ns();
    for (unsigned k = 0; k < ABAR__SIGNS; k++) {
        abar__spin_gap(abar__now_ns(), ABAR__GAP_NS);
        if (k + 1 < ABAR__SIGNS) phases_every(false, 1, 5, 1000000u); /* 5 ms, stalled */
    }
    const double burst = 5.0 * (ABAR__SIGNS - 1) / (double)(abar__now_ns() - b0); /* phases a ns */
    CHECK(abar__park_soon());
    const uint64_t until = atomic_load(&abar__calm_until);
    const uint64_t s0 = abar__now_ns();
    unsigned n = 0;
    while (abar__now_ns() - s0 < 2 * ABAR__EARLY_NS && abar__park_soon()) {
        phases_every(true, 1, 1, 200000u);
        n++;
    }
    const double park = (double)n / (double)(abar__now_ns() - s0);
    if (!abar__park_soon()) { /* ended: early, or (a loaded machine) at its end */
        if (abar__now_ns() < until && park * 3 >= burst) {
            fprintf(stderr, "a stretch %.2f times as fast as the burst's spinning ended early\n", park / burst);
            _exit(1);
        }
    } else {
        stretch_ends();
        signs_now();
        if (park >= 1.2 * burst) CHECK(abar__park_soon()); /* heard: it paid */
    }
    CHECK_EQ(abar_destroy(&sb), 0);
}

/* White box: a stretch only a little slower than spinning (1.25 times,
 * where it would have to be 4 times) is not ended early: over 20 ms, twice
 * the first look, it stays on, unless the test's own clock says its phases
 * did go 3 times slower or more (a loaded machine took the CPU from the
 * stretch's steps and not the spinning's). */
TEST(park_soon_stretch_somewhat_worse_runs_its_length)
{
    const uint64_t t0 = abar__now_ns();
    phases(false, 100, CALLS);
    const double spin = 100.0 * CALLS / (double)(abar__now_ns() - t0); /* phases a ns */
    signs_now();
    CHECK(abar__park_soon());
    const uint64_t until = atomic_load(&abar__calm_until);
    const uint64_t s0 = abar__now_ns();
    unsigned calls = 0;
    while (abar__park_soon() && calls < 200) {
        phases(true, 80, 1);
        calls++;
    }
    if (!abar__park_soon() && abar__now_ns() < until) { /* ended early (not at its end: a loaded machine) */
        const double park = 80.0 * calls / (double)(abar__now_ns() - s0);
        if (spin < 3 * park) {
            fprintf(stderr, "a stretch %.2f times slower than spinning ended after %u steps\n", spin / park,
                    calls);
            _exit(1);
        }
    }
}

/* White box: while the stretch that ended is judged, signs start no other
 * (its verdict may make them unheard). */
TEST(park_soon_no_stretch_while_judging)
{
    atomic_store(&abar__calm_until, ABAR__JUDGING);
    signs_now();
    CHECK_EQ(atomic_load(&abar__calm_until), ABAR__JUDGING);
    CHECK(!abar__park_soon());
}

/* White box: a stretch runs the length it was given.  Signs that keep
 * coming inside it (its own wake-ups can bring them) do not extend it: it
 * ends on time and is judged; signs right after it start the next, twice
 * as long. */
TEST(park_soon_stretch_ends_though_signs_go_on)
{
    signs_now();
    CHECK(abar__park_soon());
    const uint64_t until = atomic_load(&abar__calm_until);
    unsigned inside = 0;
    for (uint64_t now = abar__now_ns(); now + 2000000u < until; now = abar__now_ns()) {
        signs_now();
        CHECK_EQ(atomic_load(&abar__calm_until), until);
        inside++;
        msleep(1);
    }
    CHECK(inside > 0);
    stretch_ends();
    const uint64_t now = abar__now_ns();
    signs_now();
    CHECK(abar__park_soon());
    CHECK(atomic_load(&abar__calm_until) >= now + 2ull * ABAR__CALM_NS);
}

/* Inside a park-soon stretch a waiter still spins as long as a wake-up
 * takes (futex.c abar__spin_lean; the base budget raised to 2 ms here, so
 * the wake-up alone sets it): a phase whose peer arrives a quarter of that
 * late (2 to 20 µs) is spun through, not parked for.  Parking at once, each such wait
 * would sleep.  Each wait's sleep is seen as a voluntary context switch;
 * waits whose peer came more than half the wake-up late (a loaded or
 * instrumented machine delayed it) say nothing and are left out. */
static _Atomic int lean_quit;
static _Atomic uint64_t peer_at; /* when the peer last arrived */
static struct abar_impl *lean_impl(void) { void *p = &sb; return p; }
static uint64_t lean_wake(void) { return atomic_load_explicit(&lean_impl()->wake_ns, memory_order_relaxed); }
static void *busy_peer(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&lean_quit, memory_order_relaxed)) {
        uint64_t d = lean_wake() / 4; /* 2 to 20 µs */
        d = d < 2000u ? 2000u : d > 20000u ? 20000u : d;
        const uint64_t t0 = now_ns();
        while (now_ns() - t0 < d) {}
        atomic_store_explicit(&peer_at, now_ns(), memory_order_relaxed);
        CHECK_EQ(abar_arrive_and_wait(&sb), 0);
    }
    return NULL;
}
TEST(stretch_spins_as_long_as_a_wake_up)
{
    SKIP_IF(abar_ncpu() < 2, "one CPU: every wait of two is oversubscribed, and yields");
    CHECK_EQ(setenv("ABAR_SPIN_NS", "2000000", 1), 0); /* read once, in this forked case */
    CHECK_EQ(abar_init(&sb, 2, NULL), 0);
    /* a stretch for the whole test (white box: policy.c's own word) */
    atomic_store(&abar__calm_until, abar__now_ns() + 60000000000ull);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, busy_peer, NULL), 0);
    for (unsigned i = 0; i < 200; i++) CHECK_EQ(abar_arrive_and_wait(&sb), 0); /* wake-ups measured */
    CHECK(abar__park_soon());
    unsigned counted = 0, slept = 0, n = 0;
    const uint64_t t_end = now_ns() + 5000000000ull;
    for (; counted < 400 && now_ns() < t_end; n++) {
        struct rusage r0, r1;
        const uint64_t half = lean_wake() / 2;
        CHECK_EQ(getrusage(RUSAGE_THREAD, &r0), 0);
        const uint64_t t = now_ns();
        CHECK_EQ(abar_arrive_and_wait(&sb), 0);
        CHECK_EQ(getrusage(RUSAGE_THREAD, &r1), 0);
        /* the peer's arrival is before the release our wait acquired */
        const uint64_t late = atomic_load_explicit(&peer_at, memory_order_relaxed) - t;
        if (late > half) continue;
        counted++;
        slept += r1.ru_nvcsw != r0.ru_nvcsw;
    }
    atomic_store(&lean_quit, 1);
    CHECK_EQ(abar_arrive_and_drop(&sb), 0); /* the peer's last wait completes */
    CHECK_EQ(pthread_join(th, NULL), 0);
    if (counted < 50 || slept * 4 >= counted) {
        fprintf(stderr, "inside a stretch, %u of %u waits (of %u) for a peer under half a wake-up (%llu ns) late slept\n",
                slept, counted, n, (unsigned long long)lean_wake());
        _exit(1);
    }
    atomic_store(&abar__calm_until, 0);
}

/* White box: ABAR_SPIN_NS=0 makes default-policy waiters park at once
 * (docs/wait-policy.md), even after the barrier has measured slow
 * wake-ups, which otherwise set a floor under the budget (futex.c
 * abar__spin_budget), and inside a park-soon stretch (abar__spin_lean). */
TEST(spin_ns_zero_parks_at_once)
{
    CHECK_EQ(setenv("ABAR_SPIN_NS", "0", 1), 0); /* read once, in this forked case */
    CHECK_EQ(abar_init(&sb, 2, NULL), 0);
    atomic_store(&lean_impl()->wake_ns, 500000u); /* wake-ups of 500 µs seen */
    CHECK_EQ(abar__spin_budget(lean_impl(), 1), 0);
    CHECK_EQ(abar__spin_budget(lean_impl(), 5), 0);
    CHECK_EQ(abar__spin_lean(lean_impl()), 0);
    CHECK_EQ(abar_destroy(&sb), 0);
}

/* An oversubscribed barrier (one thread more than the CPUs) waits as the
 * others do in a park-soon stretch: a wait whose peers come 30 ms late
 * spins a wake-up's time and parks, though ABAR_SPIN_NS is 20 ms and the
 * oversubscribed rule would otherwise yield through it (its peers asleep,
 * each yield returns at once: 20 ms of CPU a wait).  The median CPU of
 * six such waits is under 5 ms. */
static void *over_peer(void *arg)
{
    for (intptr_t i = 0; i < (intptr_t)arg; i++) {
        usleep(30000);
        CHECK_EQ(abar_arrive_and_wait(&sb), 0);
    }
    return NULL;
}
TEST(oversubscribed_waits_park_soon_in_a_stretch)
{
    CHECK_EQ(setenv("ABAR_SPIN_NS", "20000000", 1), 0); /* read once, in this forked case */
    const unsigned T = (unsigned)abar_ncpu() + 1;
    CHECK_EQ(abar_init(&sb, T, NULL), 0);
    /* a stretch for the whole test (white box: policy.c's own word) */
    atomic_store(&abar__calm_until, abar__now_ns() + 60000000000ull);
    enum { N = 6 };
    pthread_t *th = calloc(T, sizeof *th);
    CHECK(th != NULL);
    for (unsigned i = 1; i < T; i++) CHECK_EQ(pthread_create(&th[i], NULL, over_peer, (void *)(intptr_t)N), 0);
    uint64_t cpu[N];
    for (unsigned i = 0; i < N; i++) {
        const uint64_t c0 = thread_cpu();
        CHECK_EQ(abar_arrive_and_wait(&sb), 0);
        cpu[i] = thread_cpu() - c0;
    }
    for (unsigned i = 1; i < T; i++) CHECK_EQ(pthread_join(th[i], NULL), 0);
    free(th);
    for (unsigned a = 1; a < N; a++)
        for (unsigned k = a; k > 0 && cpu[k] < cpu[k - 1]; k--) {
            const uint64_t t = cpu[k];
            cpu[k] = cpu[k - 1];
            cpu[k - 1] = t;
        }
    if ((cpu[N / 2 - 1] + cpu[N / 2]) / 2 >= 5000000u) {
        fprintf(stderr, "oversubscribed (T = %u) in a stretch, CPU of each 30 ms wait:", T);
        for (unsigned i = 0; i < N; i++) fprintf(stderr, " %llu", (unsigned long long)cpu[i]);
        fputc('\n', stderr);
        _exit(1);
    }
    CHECK(abar__park_soon());
    CHECK_EQ(abar_destroy(&sb), 0);
    atomic_store(&abar__calm_until, 0);
}

/* A lone waiter on a barrier of 4096 (oversubscribed), whose other
 * arrivals come 10 ms late, all at once (abar_arrive_n), and no stretch:
 * its yields return at once, so 4 per participant would burn the whole
 * wait; it parks within the longest budget instead.  The median CPU of
 * five such waits is under 3 ms. */
static void *late_n(void *arg)
{
    for (intptr_t i = 0; i < (intptr_t)arg; i++) {
        usleep(10000);
        CHECK_EQ(abar_token_error(abar_arrive_n(&sb, 4095)), 0);
    }
    return NULL;
}
TEST(lone_oversubscribed_waiter_parks_within_the_budget)
{
    CHECK_EQ(abar_init(&sb, 4096, NULL), 0);
    enum { N = 5 };
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, late_n, (void *)(intptr_t)N), 0);
    uint64_t cpu[N];
    for (unsigned i = 0; i < N; i++) {
        const uint64_t c0 = thread_cpu();
        CHECK_EQ(abar_arrive_and_wait(&sb), 0);
        cpu[i] = thread_cpu() - c0;
    }
    CHECK_EQ(pthread_join(th, NULL), 0);
    for (unsigned a = 1; a < N; a++)
        for (unsigned k = a; k > 0 && cpu[k] < cpu[k - 1]; k--) {
            const uint64_t t = cpu[k];
            cpu[k] = cpu[k - 1];
            cpu[k - 1] = t;
        }
    if (cpu[N / 2] >= 3000000u) {
        fprintf(stderr, "lone waiter on 4096, CPU of each 10 ms wait:");
        for (unsigned i = 0; i < N; i++) fprintf(stderr, " %llu", (unsigned long long)cpu[i]);
        fputc('\n', stderr);
        _exit(1);
    }
    CHECK_EQ(abar_destroy(&sb), 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
