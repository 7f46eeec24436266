/*
 * test_core_wait.c - waiting: test, current, token_at, the three wait
 * policies, wait_until, signals and cancellation points, CPU use while
 * blocked (SPEC section 2).
 * Each case is named after the SPEC row (or the call) it checks; see
 * tests/README.md for the row -> case table.
 */
#include "core_api.h"
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/* ---- waiting --------------------------------------------------------------- */

TEST(test_never_blocks)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_t b;
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&b, 2, &at), 0);
        abar_token_t t = abar_arrive(&b);
        uint64_t t0 = now_ns();
        for (int i = 0; i < 100000; i++) CHECK_EQ(abar_test(&b, t), EBUSY);
        uint64_t dt = now_ns() - t0;
        CHECK(dt < 2000000000u); /* 100k tests: no spin budget, no park */
        CHECK_EQ(inside_of(&b), 0);
        CHECK_EQ(abar_test(&b, abar_current(&b)), EBUSY);
        CHECK(tok_ok(abar_arrive(&b)));
        CHECK_EQ(abar_test(&b, t), 0);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

TEST(current_lets_nonparticipant_wait)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_t b;
        abar_attr_t at = { count_completion, NULL, POLICIES[pi] };
        atomic_store(&ncompl, 0);
        CHECK_EQ(abar_init(&b, 2, &at), 0);
        CHECK(tok_ok(abar_arrive(&b))); /* phase 0: one of two */
        struct caller c[3];
        for (int i = 0; i < 3; i++) caller_start(&c[i], &b, C_CURRENT_WAIT, (abar_token_t){0, 0});
        await_inside(&b, 3);
        abar_token_t cur = abar_current(&b);
        CHECK_EQ(abar_phase(&b), 0);       /* current takes no part */
        CHECK_EQ(abar_test(&b, cur), EBUSY);
        msleep(10);
        for (int i = 0; i < 3; i++) CHECK(!atomic_load(&c[i].done));
        CHECK(tok_ok(abar_arrive(&b)));
        for (int i = 0; i < 3; i++) CHECK_EQ(caller_join(&c[i]), 0);
        CHECK_EQ(atomic_load(&ncompl), 1);
        CHECK_EQ(abar_test(&b, cur), 0);
        CHECK_EQ(abar_phase(&b), 1);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

/* abar_token_at: a token for any phase up to the open one; beyond it EINVAL;
 * the open phase of a cancelled barrier ECANCELED; an older phase waits 0. */
static abar_t tat_bar;
static void *tat_waiter(void *arg)
{
    uint64_t ph = (uint64_t)(uintptr_t)arg;
    return (void *)(intptr_t)abar_wait(&tat_bar, abar_token_at(&tat_bar, ph));
}
TEST(token_at_names_any_reached_phase)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&tat_bar, 1, &at), 0);
        for (int i = 0; i < 5; i++) CHECK_EQ(abar_arrive_and_wait(&tat_bar), 0);
        CHECK_EQ(abar_phase(&tat_bar), 5);
        for (uint64_t ph = 0; ph < 5; ph++) { /* completed: 0 at once */
            abar_token_t t = abar_token_at(&tat_bar, ph);
            CHECK_EQ(abar_token_error(t), 0);
            CHECK_EQ(abar_wait(&tat_bar, t), 0);
            CHECK_EQ(abar_test(&tat_bar, t), 0);
        }
        abar_token_t open = abar_token_at(&tat_bar, 5);
        CHECK_EQ(abar_token_error(open), 0);
        CHECK_EQ(abar_test(&tat_bar, open), EBUSY);
        /* the same token abar_current gives: same phase, same barrier */
        abar_token_t cur = abar_current(&tat_bar);
        CHECK(cur.raw == open.raw && cur.id == open.id);
        CHECK_EQ(abar_token_error(abar_token_at(&tat_bar, 6)), EINVAL);
        CHECK_EQ(abar_token_error(abar_token_at(&tat_bar, UINT64_MAX)), EINVAL);
        CHECK_EQ(abar_token_error(abar_token_at(NULL, 0)), EINVAL);
        /* a thread blocked on the open phase is released by its completion */
        pthread_t th;
        pthread_create(&th, NULL, tat_waiter, (void *)(uintptr_t)5);
        msleep(5);
        CHECK_EQ(abar_arrive_and_wait(&tat_bar), 0);
        void *rv;
        pthread_join(th, &rv);
        CHECK_EQ((int)(intptr_t)rv, 0);
        /* cancelled: the open phase is refused, completed ones still say 0 */
        CHECK_EQ(abar_cancel(&tat_bar), 0);
        CHECK_EQ(abar_token_error(abar_token_at(&tat_bar, 6)), ECANCELED);
        CHECK_EQ(abar_wait(&tat_bar, abar_token_at(&tat_bar, 5)), 0);
        CHECK_EQ(abar_destroy(&tat_bar), 0);
        CHECK_EQ(abar_token_error(abar_token_at(&tat_bar, 0)), EINVAL); /* destroyed */
    }
}

/* Two threads exchange data through the barrier under each policy, with
 * arrive+wait, wait_until, arrive_and_wait and test polling. */
static abar_t pol_bar;
static int pol_data[2][64];
static void *pol_peer(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int r = 0; r < 2000; r++) {
        pol_data[r & 1][me] = r * 2 + me;
        int rc = 0;
        switch (r % 4) {
        case 0: rc = abar_wait(&pol_bar, abar_arrive(&pol_bar)); break;
        case 1: {
            struct timespec ts = ts_in(5000000000LL);
            rc = abar_wait_until(&pol_bar, abar_arrive(&pol_bar), &ts);
            break;
        }
        case 2: rc = abar_arrive_and_wait(&pol_bar); break;
        case 3: {
            abar_token_t t = abar_arrive(&pol_bar);
            while ((rc = abar_test(&pol_bar, t)) == EBUSY) sched_yield();
        }
        }
        CHECK_EQ(rc, 0);
        if (pol_data[r & 1][1 - me] != r * 2 + 1 - me) {
            fprintf(stderr, "round %d: thread %d read %d from its peer, want %d\n", r, me,
                    pol_data[r & 1][1 - me], r * 2 + 1 - me);
            _exit(1);
        }
    }
    return NULL;
}

TEST(wait_policies_all_three)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&pol_bar, 2, &at), 0);
        pthread_t a, c;
        pthread_create(&a, NULL, pol_peer, (void *)0);
        pthread_create(&c, NULL, pol_peer, (void *)1);
        pthread_join(a, NULL);
        pthread_join(c, NULL);
        if (abar_phase(&pol_bar) != 2000) {
            fprintf(stderr, "policy %s: phase %llu\n", policy_name(POLICIES[pi]),
                    (unsigned long long)abar_phase(&pol_bar));
            _exit(1);
        }
        CHECK_EQ(abar_destroy(&pol_bar), 0);
    }
}

/* White box: SPIN never sets PARKED (never sleeps in the kernel), PARK sets
 * it at once; default parks after its spin budget. */
TEST(wait_policy_spin_never_parks_park_parks)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_t b;
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&b, 2, &at), 0);
        struct caller c;
        caller_start(&c, &b, C_ARRIVE_AND_WAIT, (abar_token_t){0, 0});
        await_inside(&b, 1);
        bool parked = false;
        uint64_t t0 = now_ns();
        while (now_ns() - t0 < 200000000u) { /* 200 ms: far past the default spin budget */
            if (atomic_load(&I(&b)->state) & ST_PARKED) { parked = true; break; }
            msleep(1);
        }
        if (parked != (POLICIES[pi] != ABAR_WAIT_SPIN)) {
            fprintf(stderr, "policy %s: parked=%d after 200 ms\n", policy_name(POLICIES[pi]), parked);
            _exit(1);
        }
        CHECK(!atomic_load(&c.done));
        CHECK(tok_ok(abar_arrive(&b)));
        CHECK_EQ(caller_join(&c), 0);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

TEST(wait_until_null_or_bad_nsec_einval)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(abar_wait_until(&b, t, NULL), EINVAL);
    struct timespec bad[] = { {0, -1}, {0, 1000000000}, {1, -5}, {1, 2000000000L}, {0, LONG_MIN} };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct timespec ts = ts_in(1000000000);
        ts.tv_nsec = bad[i].tv_nsec;
        CHECK_EQ(abar_wait_until(&b, t, &ts), EINVAL);
    }
    /* also for a token of a completed phase, and with a NULL barrier */
    abar_token_t done = abar_arrive(&b); /* completes phase 0 */
    CHECK_EQ(abar_test(&b, done), 0);
    struct timespec ts = ts_in(0);
    ts.tv_nsec = 1000000000;
    CHECK_EQ(abar_wait_until(&b, done, &ts), EINVAL);
    CHECK_EQ(abar_wait_until(&b, done, NULL), EINVAL);
    CHECK_EQ(abar_wait_until(NULL, done, NULL), EINVAL);
    /* the barrier unchanged: phase 1, two arrivals pending */
    CHECK_EQ(abar_phase(&b), 1);
    abar_token_t n = abar_arrive(&b);
    CHECK_EQ(abar_test(&b, n), EBUSY);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_test(&b, n), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(wait_until_past_deadline_complete_returns_0)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 1, NULL), 0);
    abar_token_t t = abar_arrive(&b);
    struct timespec past = ts_in(-1000000), zero = {0, 0}, now = ts_in(0);
    CHECK_EQ(abar_wait_until(&b, t, &past), 0);
    CHECK_EQ(abar_wait_until(&b, t, &zero), 0);
    CHECK_EQ(abar_wait_until(&b, t, &now), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(wait_until_past_deadline_incomplete_etimedout_arrival_stays_counted)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_t b;
        abar_attr_t at = { count_completion, NULL, POLICIES[pi] };
        atomic_store(&ncompl, 0);
        CHECK_EQ(abar_init(&b, 3, &at), 0);
        abar_token_t t = abar_arrive(&b);
        struct timespec past = ts_in(-1000000), zero = {0, 0};
        uint64_t t0 = now_ns();
        CHECK_EQ(abar_wait_until(&b, t, &past), ETIMEDOUT);
        CHECK_EQ(abar_wait_until(&b, t, &zero), ETIMEDOUT);
        CHECK(now_ns() - t0 < 500000000u); /* at once, not after a spin budget or a sleep */
        /* a deadline in the near future: returns ETIMEDOUT no earlier than it */
        struct timespec soon = ts_in(30000000);
        uint64_t dl = (uint64_t)soon.tv_sec * 1000000000u + (uint64_t)soon.tv_nsec;
        CHECK_EQ(abar_wait_until(&b, t, &soon), ETIMEDOUT);
        CHECK(now_ns() >= dl);
        CHECK(now_ns() - dl < 2000000000u);
        CHECK_EQ(inside_of(&b), 0);
        /* the arrival stays counted: 2 more complete the phase (not 3) */
        CHECK(tok_ok(abar_arrive(&b)));
        CHECK_EQ(abar_test(&b, t), EBUSY);
        CHECK(tok_ok(abar_arrive(&b)));
        CHECK_EQ(abar_test(&b, t), 0);
        CHECK_EQ(abar_wait_until(&b, t, &past), 0);
        CHECK_EQ(atomic_load(&ncompl), 1);
        CHECK_EQ(abar_phase(&b), 1);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

TEST(wait_until_released_before_deadline)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_t b;
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&b, 2, &at), 0);
        struct caller c;
        caller_start(&c, &b, C_WAIT_UNTIL, abar_arrive(&b));
        await_inside(&b, 1);
        msleep(5);
        CHECK(!atomic_load(&c.done));
        uint64_t t0 = now_ns();
        CHECK(tok_ok(abar_arrive(&b)));
        CHECK_EQ(caller_join(&c), 0);
        CHECK(c.returned_ns - t0 < 1000000000u); /* released, not timed out (30 s) */
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

/* ---- signals ------------------------------------------------------------------ */

#if defined(_WIN32)
TEST_NOT_HERE(signals_no_eintr, "POSIX signals (sigaction, pthread_kill): Windows has none")
#else
static _Atomic long sig_count;
static void sig_handler(int sig)
{
    (void)sig;
    atomic_fetch_add(&sig_count, 1);
}

TEST(signals_no_eintr)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sig_handler;
    sa.sa_flags = 0; /* no SA_RESTART: a raw futex wait would see EINTR */
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
    for (int pi = 0; pi < 3; pi++) {
        for (int k = 0; k < C_NKINDS; k++) {
            abar_t b;
            abar_attr_t at = { NULL, NULL, POLICIES[pi] };
            CHECK_EQ(abar_init(&b, 2, &at), 0);
            abar_token_t t = {0, 0};
            if (k != C_ARRIVE_AND_WAIT) t = abar_arrive(&b);
            struct caller c;
            caller_start(&c, &b, k, t);
            await_inside(&b, 1);
            long before = atomic_load(&sig_count);
            for (int i = 0; i < 300; i++) {
                pthread_kill(c.th, SIGUSR1);
                if (i % 10 == 0) msleep(1);
                if (atomic_load(&c.done)) {
                    fprintf(stderr, "policy %s, %s returned %d after %d signals, phase incomplete\n",
                            policy_name(POLICIES[pi]), kind_name(k), c.ret, i + 1);
                    _exit(1);
                }
            }
            msleep(5);
            CHECK(!atomic_load(&c.done));
            CHECK(atomic_load(&sig_count) > before); /* the signals did arrive */
            if (k == C_CURRENT_WAIT) CHECK(tok_ok(abar_arrive(&b)));
            CHECK(tok_ok(abar_arrive(&b)));
            CHECK_EQ(caller_join(&c), 0);
            CHECK_EQ(abar_destroy(&b), 0);
        }
    }
    /* a timed wait with signals still waits its full time, then ETIMEDOUT */
    for (int pi = 0; pi < 3; pi++) {
        abar_t b;
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&b, 2, &at), 0);
        struct caller c;
        memset(&c, 0, sizeof c);
        c.b = &b;
        c.kind = C_WAIT_UNTIL;
        c.t = abar_arrive(&b);
        c.abstime = ts_in(150000000);
        uint64_t dl = (uint64_t)c.abstime.tv_sec * 1000000000u + (uint64_t)c.abstime.tv_nsec;
        CHECK_EQ(pthread_create(&c.th, NULL, caller_main, &c), 0);
        while (!atomic_load(&c.done)) {
            pthread_kill(c.th, SIGUSR1);
            msleep(1);
        }
        pthread_join(c.th, NULL);
        CHECK_EQ(c.ret, ETIMEDOUT);
        CHECK(c.returned_ns >= dl);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}
#endif

/* Waits are not thread-cancellation points: a deferred pthread_cancel sent to
 * a blocked waiter takes effect only at a later cancellation point, after the
 * wait returned 0. */
static abar_t cp_bar;
static _Atomic int cp_returned;
static void *cp_thread(void *arg)
{
    (void)arg;
    abar_token_t t = abar_current(&cp_bar);
    int r = abar_wait(&cp_bar, t);
    atomic_store(&cp_returned, r + 1);
    for (;;) {
        pthread_testcancel();
        msleep(1);
    }
    return NULL;
}

TEST(waits_are_not_cancellation_points)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&cp_bar, 1, &at), 0);
        atomic_store(&cp_returned, 0);
        pthread_t th;
        pthread_create(&th, NULL, cp_thread, NULL);
        await_inside(&cp_bar, 1);
        msleep(5);
        CHECK_EQ(pthread_cancel(th), 0);
        msleep(20);
        CHECK_EQ(atomic_load(&cp_returned), 0);
        CHECK_EQ(inside_of(&cp_bar), 1);
        CHECK(tok_ok(abar_arrive(&cp_bar)));
        void *res;
        pthread_join(th, &res);
        CHECK(res == PTHREAD_CANCELED);
        CHECK_EQ(atomic_load(&cp_returned), 1); /* abar_wait returned 0 first */
        CHECK_EQ(abar_destroy(&cp_bar), 0);
    }
}

/* The default policy spins only briefly: a thread blocked for 200 ms uses
 * well under 20 ms of CPU (its own thread CPU clock), for wait and for
 * arrive_and_wait; so does PARK. */
static abar_t cpu_bar;
static _Atomic int cpu_in;
static void *cpu_waiter(void *arg)
{
    int kind = (int)(intptr_t)arg;
    struct timespec a, z;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    atomic_store(&cpu_in, 1);
    int r = kind ? abar_arrive_and_wait(&cpu_bar) : abar_wait(&cpu_bar, abar_current(&cpu_bar));
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &z);
    CHECK_EQ(r, 0);
    int64_t ns = (int64_t)(z.tv_sec - a.tv_sec) * 1000000000 + (z.tv_nsec - a.tv_nsec);
    return (void *)(intptr_t)ns;
}

TEST(blocked_wait_burns_little_cpu)
{
    const unsigned pol[2] = {0, ABAR_WAIT_PARK};
    for (int pi = 0; pi < 2; pi++) {
        for (int kind = 0; kind < 2; kind++) {
            abar_attr_t at = { NULL, NULL, pol[pi] };
            CHECK_EQ(abar_init(&cpu_bar, 2, &at), 0);
            if (kind == 0) CHECK(tok_ok(abar_arrive(&cpu_bar)));
            atomic_store(&cpu_in, 0);
            pthread_t th;
            pthread_create(&th, NULL, cpu_waiter, (void *)(intptr_t)kind);
            await_inside(&cpu_bar, 1);
            msleep(200);
            CHECK(tok_ok(abar_arrive(&cpu_bar)));
            void *res;
            pthread_join(th, &res);
            long ns = (long)(intptr_t)res;
            if (ns > 20000000) {
                fprintf(stderr, "policy %s, %s: %ld us of CPU for a 200 ms wait\n",
                        policy_name(pol[pi]), kind ? "arrive_and_wait" : "wait", ns / 1000);
                _exit(1);
            }
            CHECK_EQ(abar_destroy(&cpu_bar), 0);
        }
    }
}

/* ABAR_SPIN_NS overrides the spin budget: with 5 s, a default-policy waiter
 * is still spinning (not parked) 200 ms later; released normally. */
TEST(spin_budget_env_override)
{
    CHECK_EQ(setenv("ABAR_SPIN_NS", "5000000000", 1), 0); /* read once, in this forked case */
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    struct caller c;
    caller_start(&c, &b, C_ARRIVE_AND_WAIT, (abar_token_t){0, 0});
    await_inside(&b, 1);
    msleep(200);
    CHECK(!(atomic_load(&I(&b)->state) & ST_PARKED));
    CHECK(!atomic_load(&c.done));
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(caller_join(&c), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* White box: the spin budget adapts (futex.c abar__spin_learn).  A waiter
 * woken less than 800 µs after it parked doubles the budget of later waits,
 * up to 16 times the base (800 µs); one woken later resets it.
 *
 * The rule is driven through abar__spin_learn on this thread (what
 * abar__publish calls), with `parked_at` set as abar__spin_parking sets it
 * (when block() parks), so that a loaded machine,
 * which can hold a waiter's release back for milliseconds, cannot break a
 * run of short parks: the clock readings around each call bound the one
 * abar__spin_learn made, and a step whose bounds straddle 800 µs (this
 * thread descheduled) says nothing and starts the run again.  Real parks
 * then show that the library's own wait and release run the rule: one
 * released at once (a doubling, or a reset if this thread was held back),
 * and one released 5 ms after it parked (a reset). */
enum { SHORT_PARK = 1, LONG_PARK = -1, UNSURE = 0 };
static int classify(uint64_t at, uint64_t before, uint64_t after)
{
    return after - at < 800000u ? SHORT_PARK : before - at >= 800000u ? LONG_PARK : UNSURE;
}
/* abar__spin_learn on a park noted `ago_ns` ago: what it saw */
static int learn_after(abar_t *b, uint64_t ago_ns)
{
    atomic_store(&I(b)->parked_at, abar__now_ns() - ago_ns);
    const uint64_t at = atomic_load(&I(b)->parked_at);
    const uint64_t before = abar__now_ns();
    abar__spin_learn(I(b));
    return classify(at, before, abar__now_ns());
}
/* A waiter parks on b, then this thread completes the phase: what the
 * completer's abar__spin_learn saw. */
static int park_then_release(abar_t *b, unsigned hold_ms)
{
    struct caller c;
    caller_start(&c, b, C_ARRIVE_AND_WAIT, (abar_token_t){0, 0});
    await_inside(b, 1);
    uint64_t t0 = now_ns();
    while (!(atomic_load(&I(b)->state) & ST_PARKED)) {
        if (now_ns() - t0 > 5000000000u) { fprintf(stderr, "never parked\n"); _exit(1); }
        sched_yield();
    }
    if (hold_ms) msleep((int)hold_ms);
    const uint64_t at = atomic_load(&I(b)->parked_at); /* what the waiter noted, before PARKED */
    const uint64_t before = now_ns();
    CHECK(tok_ok(abar_arrive(b))); /* the last arrival: abar__spin_learn runs in it */
    const uint64_t after = now_ns();
    CHECK_EQ(caller_join(&c), 0);
    return classify(at, before, after);
}

TEST(spin_budget_adapts_to_short_parks)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    const uint64_t base = abar__spin_ns();
    CHECK_EQ(abar__spin_budget(I(&b), 1), base);
    /* the rule: parks of 100 µs double the budget, five in a row reach the bound */
    unsigned shorts = 0;
    for (unsigned tries = 0; shorts < 5; tries++) {
        CHECK(tries < 10000);
        const uint32_t was = atomic_load(&I(&b)->spin_shift);
        const int v = learn_after(&b, 100000);
        if (v == SHORT_PARK) CHECK_EQ(atomic_load(&I(&b)->spin_shift), was < 4 ? was + 1 : 4);
        if (v == LONG_PARK) CHECK_EQ(atomic_load(&I(&b)->spin_shift), 0);
        shorts = v == SHORT_PARK ? shorts + 1 : 0; /* after UNSURE the shift is not known */
    }
    CHECK_EQ(atomic_load(&I(&b)->spin_shift), 4);
    CHECK_EQ(abar__spin_budget(I(&b), 1), base * 16 < 800000 ? base * 16 : 800000);
    CHECK_EQ(abar__spin_budget(I(&b), 5), 800000); /* the doubling stops at 800 µs */
    /* a park that lasted 5 ms: parking paid off, back to the base */
    CHECK_EQ(learn_after(&b, 5000000), LONG_PARK);
    CHECK_EQ(atomic_load(&I(&b)->spin_shift), 0);
    CHECK_EQ(abar__spin_budget(I(&b), 1), base);

    /* the library runs it: a real park released at once doubles the shift
     * (or resets it, if this thread was held back past 800 µs), and one
     * released 5 ms after it parked resets it */
    const int v = park_then_release(&b, 0);
    if (v == SHORT_PARK) CHECK_EQ(atomic_load(&I(&b)->spin_shift), 1);
    if (v == LONG_PARK) CHECK_EQ(atomic_load(&I(&b)->spin_shift), 0);
    atomic_store(&I(&b)->spin_shift, 3);
    CHECK_EQ(park_then_release(&b, 5), LONG_PARK);
    CHECK_EQ(atomic_load(&I(&b)->spin_shift), 0);
    atomic_store(&I(&b)->wake_ns, 0);
    CHECK_EQ(abar__spin_budget(I(&b), 1), base);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* The budget is at least what woken sleepers took to run again
 * (futex.c): a sleeper back 300 µs after the completer's wake raises it to
 * 300 µs at once; fast wake-ups bring it down an eighth of the way each;
 * and a wake-up of milliseconds raises it no further than 800 µs. */
TEST(spin_budget_covers_slow_wakeups)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    const uint64_t base = abar__spin_ns();
    CHECK(base < 300000); /* ABAR_SPIN_NS unset, or small */
    abar__spin_learn(I(&b)); /* a completer wakes sleepers now */
    const uint64_t t0 = now_ns();
    while (now_ns() - t0 < 300000) {}
    abar__spin_woken(I(&b)); /* one is back 300 µs later */
    const uint64_t w = atomic_load(&I(&b)->wake_ns);
    CHECK(w >= 300000 && w <= 800000); /* 800 µs if this thread was preempted meanwhile */
    CHECK_EQ(abar__spin_budget(I(&b), 1), w);
    /* fast wake-ups: down by an eighth of the difference each (a step in
     * which this thread was preempted reads as a slow wake: not counted) */
    unsigned down = 0;
    for (unsigned i = 0; i < 8; i++) {
        const uint64_t before = atomic_load(&I(&b)->wake_ns);
        abar__spin_learn(I(&b));
        abar__spin_woken(I(&b));
        const uint64_t after = atomic_load(&I(&b)->wake_ns);
        if (after < before) {
            CHECK(after >= before - before / 8 - 1); /* no more than an eighth */
            down++;
        }
    }
    CHECK(down >= 6);
    /* and on down to a few µs */
    for (unsigned i = 0; i < 1000 && atomic_load(&I(&b)->wake_ns) >= base / 2; i++) {
        abar__spin_learn(I(&b));
        abar__spin_woken(I(&b));
    }
    CHECK(atomic_load(&I(&b)->wake_ns) < base / 2);
    atomic_store(&I(&b)->spin_shift, 0); /* learn() doubled it: forget */
    CHECK_EQ(abar__spin_budget(I(&b), 1), base);
    /* a wake-up of 5 ms: the bound, not 10 ms */
    abar__spin_learn(I(&b));
    usleep(5000);
    abar__spin_woken(I(&b));
    CHECK_EQ(atomic_load(&I(&b)->wake_ns), 800000);
    CHECK_EQ(abar__spin_budget(I(&b), 1), 800000);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* White box: while a sleeper woken by the last release is still on its way
 * back (asleep[] of that phase's parity, block()), a waiter keeps spinning
 * rather than park, so that the next phase does not wait for wake-ups too;
 * 20 ms at most, so a sleeper that never comes back does not keep it
 * spinning.  Here the count is set by hand: one sleeper of phase -1 that
 * never comes back. */
TEST(waiters_spin_while_woken_sleepers_come_back)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    atomic_store(&I(&b)->asleep[1], 1); /* phase 0's waiters look at parity (0 - 1) & 1 */
    struct caller c;
    caller_start(&c, &b, C_ARRIVE_AND_WAIT, (abar_token_t){0, 0});
    await_inside(&b, 1);
    const uint64_t t0 = now_ns();
    while (!(atomic_load(&I(&b)->state) & ST_PARKED)) {
        CHECK(now_ns() - t0 < 5000000000u);
        msleep(1);
    }
    const uint64_t spun = now_ns() - t0;
    /* spun well past the budget (50 µs) while the sleeper was away, unless
     * the park-soon policy judged the host busy meanwhile (policy.c: a
     * loaded or sanitized run), when parking early is what it is for */
    if (atomic_load(&abar__calm_until) == 0) CHECK(spun >= 15000000u);
    else printf("  (a park-soon stretch ran: the waiter parked after %llu us)\n",
                (unsigned long long)spun / 1000);
    CHECK(spun < 2000000000u); /* and the bound ended it */
    atomic_store(&I(&b)->asleep[1], 0);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(caller_join(&c), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* The CPUs the core counts (oversubscription: more expected threads than
 * these) are the process's, its main thread's affinity mask, at most the
 * online ones and a cgroup quota's: under `taskset -c 0` (CTest
 * test_core_wait_1cpu) one.  abar_ncpu tells the same count to callers
 * (the MPI layer and the ring decide with it too). */
#if defined(_WIN32)
TEST_NOT_HERE(ncpu_is_the_process_cpus, "compares with Linux's affinity calls (sched_getaffinity)")
#else
TEST(ncpu_is_the_process_cpus)
{
    cpu_set_t s;
    CHECK_EQ(sched_getaffinity(getpid(), sizeof s, &s), 0);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long want = CPU_COUNT(&s) < online ? CPU_COUNT(&s) : online;
    const long quota = abar__cgroup_cpus(""); /* 0: none (cgroup_quota_counts) */
    if (quota && quota < want) want = quota;
    CHECK_EQ(abar__ncpu(), want);
    CHECK_EQ(abar_ncpu(), want);
}
#endif

#if defined(__x86_64__)
/* cpus.c's probe, which decides whether a waiter released in its first spin
 * prefetches the state line for writing (abar__prefetch_write): it says yes
 * exactly where the kernel lists the CPU's PRFCHW flag (3dnowprefetch). */
TEST(prefetchw_probe_matches_cpuinfo)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    CHECK(f != NULL);
    static char line[1 << 16];
    int seen = 0, has = 0;
    while (!seen && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            seen = 1;
            has = strstr(line, " 3dnowprefetch") != NULL;
        }
    fclose(f);
    CHECK(seen);
    CHECK_EQ((int)abar__prefetchw_ok, has);
}
#endif

/* A cgroup v2 CPU quota counts too (cpus.c): in a fake tree, the smallest
 * cpu.max on the way from the process's cgroup to the root, rounded up. */
#if defined(_WIN32)
TEST_NOT_HERE(cgroup_quota_counts, "Linux's cgroups, in a tree made with POSIX mkdtemp and mkdir")
#else
static void put_file(const char *root, const char *rel, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        (void)mkdir(path, 0700); /* EEXIST is fine */
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

TEST(cgroup_quota_counts)
{
    char root[] = "/tmp/abar-cgroup-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    /* no cgroup file at all, then a v1-only one: no quota */
    CHECK_EQ(abar__cgroup_cpus(root), 0);
    put_file(root, "proc/self/cgroup", "4:cpu,cpuacct:/x\n2:memory:/x\n");
    CHECK_EQ(abar__cgroup_cpus(root), 0);
    /* v2, /a/b: 1.5 CPUs there (2), none above */
    put_file(root, "proc/self/cgroup", "0::/a/b\n");
    put_file(root, "sys/fs/cgroup/a/b/cpu.max", "150000 100000\n");
    put_file(root, "sys/fs/cgroup/a/cpu.max", "max 100000\n");
    CHECK_EQ(abar__cgroup_cpus(root), 2);
    /* a parent's smaller quota binds */
    put_file(root, "sys/fs/cgroup/a/cpu.max", "50000 100000\n");
    CHECK_EQ(abar__cgroup_cpus(root), 1);
    /* the root's own cpu.max is read too; a larger one changes nothing */
    put_file(root, "sys/fs/cgroup/cpu.max", "800000 100000\n");
    CHECK_EQ(abar__cgroup_cpus(root), 1);
    /* no quota anywhere on the way, and files this does not understand */
    put_file(root, "sys/fs/cgroup/a/b/cpu.max", "max 100000\n");
    put_file(root, "sys/fs/cgroup/a/cpu.max", "lots\n");
    put_file(root, "sys/fs/cgroup/cpu.max", "100000 0\n");
    CHECK_EQ(abar__cgroup_cpus(root), 0);
    /* a container's view: its cgroup is the root of its tree */
    put_file(root, "proc/self/cgroup", "0::/\n");
    put_file(root, "sys/fs/cgroup/cpu.max", "250000 100000\n");
    CHECK_EQ(abar__cgroup_cpus(root), 3);
    /* and the real machine: whatever it says, ncpu is at most it */
    const unsigned q = abar__cgroup_cpus("");
    CHECK(q == 0 || abar__ncpu() <= q);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK_EQ(system(cmd), 0);
}
#endif

/* A base above the bound is kept as it is, never doubled past it nor cut. */
TEST(spin_budget_env_above_bound_kept)
{
    CHECK_EQ(setenv("ABAR_SPIN_NS", "2000000", 1), 0); /* read once, in this forked case */
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    atomic_store(&I(&b)->spin_shift, 3);
    CHECK_EQ(abar__spin_budget(I(&b), 1), 2000000);
    CHECK_EQ(abar_destroy(&b), 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
