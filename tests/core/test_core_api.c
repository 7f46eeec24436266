/*
 * test_core_api.c - every call of SPEC section 2, and every row of its
 * "Defined behaviour" table, case by case.
 *
 * Each case is named after the row (or the call) it checks; see
 * tests/README.md for the row -> case table.  Cases that need another
 * thread to be *blocked* inside a call wait until the barrier says so (its
 * private `inside` count, or the PARKED bit of the state word), then give it
 * a short grace period: no case relies on a sleep alone for correctness.
 */
#include "harness.h"
#include "abar_internal.h" /* abar__test_set_phase, and the state word to watch */
#include <abar.h>

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

/* ---- helpers ---------------------------------------------------------------- */

static const unsigned POLICIES[3] = {0, ABAR_WAIT_SPIN, ABAR_WAIT_PARK};
static const char *policy_name(unsigned f)
{
    return f & ABAR_WAIT_SPIN ? "spin" : f & ABAR_WAIT_PARK ? "park" : "default";
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC now + delta_ns (delta may be negative). */
static struct timespec ts_in(int64_t delta_ns)
{
    int64_t t = (int64_t)now_ns() + delta_ns;
    if (t < 0) t = 0;
    return (struct timespec){ .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };
}

static void msleep(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static struct abar_impl *I(abar_t *b) { return (struct abar_impl *)(void *)b; }

static unsigned inside_of(abar_t *b)
{
    return abar__test_waiters(b);
}

/* Waits (up to 5 s) until n threads are registered inside a wait on b. */
static void await_inside(abar_t *b, unsigned n)
{
    uint64_t t0 = now_ns();
    while (inside_of(b) < n) {
        if (now_ns() - t0 > 5000000000u) {
            fprintf(stderr, "no thread entered the wait within 5 s (inside=%u, want %u)\n",
                    inside_of(b), n);
            _exit(1);
        }
        sched_yield();
    }
}

/* Waits (up to 5 s) until the current phase has exactly n arrivals pending
 * (white box: the state word), e.g. until another thread's arrival counted. */
static void await_pending(abar_t *b, uint32_t n)
{
    uint64_t t0 = now_ns();
    while (st_pending(atomic_load(&I(b)->state)) != (int64_t)n) {
        if (now_ns() - t0 > 5000000000u) {
            fprintf(stderr, "pending never reached %u\n", n);
            _exit(1);
        }
        sched_yield();
    }
}

static bool tok_ok(abar_token_t t) { return abar_token_error(t) == 0; }

static bool same_token(abar_token_t a, abar_token_t b) { return a.raw == b.raw && a.id == b.id; }

/* A thread that makes one blocking call on a barrier. */
enum call_kind { C_WAIT, C_WAIT_UNTIL, C_ARRIVE_AND_WAIT, C_CURRENT_WAIT, C_NKINDS };
static const char *kind_name(int k)
{
    static const char *n[] = {"wait", "wait_until", "arrive_and_wait", "current+wait"};
    return n[k];
}

struct caller {
    abar_t *b;
    int kind;
    abar_token_t t;          /* for C_WAIT, C_WAIT_UNTIL */
    struct timespec abstime; /* for C_WAIT_UNTIL */
    _Atomic int started, done;
    int ret;
    uint64_t returned_ns;
    pthread_t th;
};

static void *caller_main(void *arg)
{
    struct caller *c = arg;
    atomic_store(&c->started, 1);
    int r;
    switch (c->kind) {
    case C_WAIT: r = abar_wait(c->b, c->t); break;
    case C_WAIT_UNTIL: r = abar_wait_until(c->b, c->t, &c->abstime); break;
    case C_ARRIVE_AND_WAIT: r = abar_arrive_and_wait(c->b); break;
    default: {
        abar_token_t t = abar_current(c->b);
        r = tok_ok(t) ? abar_wait(c->b, t) : abar_token_error(t);
    }
    }
    c->ret = r;
    c->returned_ns = now_ns();
    atomic_store(&c->done, 1);
    return NULL;
}

static void caller_start(struct caller *c, abar_t *b, int kind, abar_token_t t)
{
    memset(c, 0, sizeof *c);
    c->b = b;
    c->kind = kind;
    c->t = t;
    c->abstime = ts_in(30 * 1000000000LL); /* far: these waits are released otherwise */
    CHECK_EQ(pthread_create(&c->th, NULL, caller_main, c), 0);
}

/* Joins c, failing by name if it does not return within 5 s. */
static int caller_join(struct caller *c)
{
    uint64_t t0 = now_ns();
    while (!atomic_load(&c->done)) {
        if (now_ns() - t0 > 5000000000u) {
            fprintf(stderr, "blocked %s did not return within 5 s\n", kind_name(c->kind));
            _exit(1);
        }
        msleep(1);
    }
    pthread_join(c->th, NULL);
    return c->ret;
}

/* Completion functions used below. */
static _Atomic int ncompl;
static void count_completion(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ncompl, 1);
}

/* ---- abar_init ------------------------------------------------------------- */

TEST(expected_max_macro)
{
    CHECK(ABAR_EXPECTED_MAX >= (1u << 20) - 1);
}

TEST(init_expected_zero_einval)
{
    abar_t b;
    memset(&b, 0, sizeof b);
    CHECK_EQ(abar_init(&b, 0, NULL), EINVAL);
    /* nothing was initialised: calls on it are refused */
    CHECK_EQ(abar_destroy(&b), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive(&b)), EINVAL);
    /* and a live barrier is left unchanged by a refused re-init */
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(abar_init(&b, 0, NULL), EINVAL);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK_EQ(abar_wait(&b, abar_arrive(&b)), 0);
    CHECK_EQ(abar_wait(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(init_expected_above_max_einval)
{
    abar_t b;
    memset(&b, 0, sizeof b);
    CHECK_EQ(abar_init(&b, ABAR_EXPECTED_MAX + 1, NULL), EINVAL);
    CHECK_EQ(abar_init(&b, UINT32_MAX, NULL), EINVAL);
    CHECK_EQ(abar_init(&b, 1u << 31, NULL), EINVAL);
    CHECK_EQ(abar_destroy(&b), EINVAL);
    /* the limit itself is accepted and works: one arrive_n of all of it */
    CHECK_EQ(abar_init(&b, ABAR_EXPECTED_MAX, NULL), 0);
    abar_token_t t = abar_arrive_n(&b, ABAR_EXPECTED_MAX - 1);
    CHECK(tok_ok(t));
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK_EQ(abar_wait(&b, abar_arrive(&b)), 0);
    CHECK_EQ(abar_phase(&b), 1);
    /* a refused re-init leaves the live barrier as it was */
    t = abar_arrive(&b);
    CHECK_EQ(abar_init(&b, ABAR_EXPECTED_MAX + 1, NULL), EINVAL);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK(tok_ok(abar_arrive_n(&b, ABAR_EXPECTED_MAX - 1)));
    CHECK_EQ(abar_wait(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 2);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(init_unknown_flags)
{
    abar_t b;
    memset(&b, 0, sizeof b);
    for (int bit = 0; bit < 32; bit++) {
        unsigned f = 1u << bit;
        if (f & (ABAR_PSHARED | ABAR_WAIT_SPIN | ABAR_WAIT_PARK)) continue;
        abar_attr_t a = { NULL, NULL, f };
        if (abar_init(&b, 1, &a) != EINVAL) {
            fprintf(stderr, "flag bit %d accepted\n", bit);
            _exit(1);
        }
        a.flags = f | ABAR_PSHARED;
        CHECK_EQ(abar_init(&b, 1, &a), EINVAL);
    }
    CHECK_EQ(abar_destroy(&b), EINVAL); /* never initialised */
    /* unchanged live barrier */
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t t = abar_arrive(&b);
    abar_attr_t bad = { count_completion, NULL, 0x100u };
    CHECK_EQ(abar_init(&b, 2, &bad), EINVAL);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK_EQ(abar_wait(&b, abar_arrive(&b)), 0);
    CHECK_EQ(atomic_load(&ncompl), 0); /* the refused attr's completion was not taken */
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(init_spin_and_park)
{
    abar_t b;
    memset(&b, 0, sizeof b);
    abar_attr_t a = { NULL, NULL, ABAR_WAIT_SPIN | ABAR_WAIT_PARK };
    CHECK_EQ(abar_init(&b, 1, &a), EINVAL);
    a.flags |= ABAR_PSHARED;
    CHECK_EQ(abar_init(&b, 1, &a), EINVAL);
    CHECK_EQ(abar_destroy(&b), EINVAL);
}

TEST(init_every_valid_flag_combination)
{
    const unsigned combos[] = {0, ABAR_PSHARED, ABAR_WAIT_SPIN, ABAR_WAIT_PARK,
                               ABAR_PSHARED | ABAR_WAIT_SPIN, ABAR_PSHARED | ABAR_WAIT_PARK};
    for (size_t i = 0; i < sizeof combos / sizeof combos[0]; i++) {
        abar_t b;
        atomic_store(&ncompl, 0);
        abar_attr_t a = { count_completion, NULL, combos[i] };
        CHECK_EQ(abar_init(&b, 1, &a), 0);
        for (int k = 0; k < 3; k++) CHECK_EQ(abar_arrive_and_wait(&b), 0);
        CHECK_EQ(atomic_load(&ncompl), 3);
        CHECK_EQ(abar_phase(&b), 3);
        CHECK_EQ(abar_destroy(&b), 0);
    }
    /* NULL attr: defaults */
    abar_t b;
    CHECK_EQ(abar_init(&b, 1, NULL), 0);
    CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(phase_starts_0_increments)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 3, NULL), 0);
    CHECK_EQ(abar_phase(&b), 0);
    for (uint64_t p = 0; p < 100; p++) {
        abar_token_t t1 = abar_arrive(&b);
        CHECK_EQ(abar_phase(&b), p);
        abar_token_t t2 = abar_arrive(&b);
        CHECK_EQ(abar_phase(&b), p);
        abar_token_t t3 = abar_arrive(&b);
        CHECK_EQ(abar_phase(&b), p + 1);
        CHECK(same_token(t1, t2) && same_token(t2, t3));
        CHECK_EQ(abar_wait(&b, t1), 0);
    }
    /* re-init restarts at 0 */
    CHECK_EQ(abar_init(&b, 1, NULL), 0);
    CHECK_EQ(abar_phase(&b), 0);
    CHECK_EQ(abar_destroy(&b), 0);
    CHECK_EQ(abar_phase(&b), 0); /* a destroyed barrier reads as 0 */
}

/* abar_phase never decreases while other threads complete phases. */
static abar_t mono_bar;
static _Atomic int mono_stop;
static void *mono_reader(void *arg)
{
    (void)arg;
    uint64_t last = 0;
    long n = 0;
    while (!atomic_load(&mono_stop)) {
        uint64_t p = abar_phase(&mono_bar);
        if (p < last) {
            fprintf(stderr, "abar_phase went back: %llu after %llu\n",
                    (unsigned long long)p, (unsigned long long)last);
            _exit(1);
        }
        last = p;
        n++;
    }
    return (void *)n;
}
static void *mono_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5000; i++) CHECK_EQ(abar_arrive_and_wait(&mono_bar), 0);
    return NULL;
}

TEST(phase_never_decreases_under_load)
{
    CHECK_EQ(abar_init(&mono_bar, 2, NULL), 0);
    pthread_t r, w1, w2;
    pthread_create(&r, NULL, mono_reader, NULL);
    pthread_create(&w1, NULL, mono_worker, NULL);
    pthread_create(&w2, NULL, mono_worker, NULL);
    pthread_join(w1, NULL);
    pthread_join(w2, NULL);
    atomic_store(&mono_stop, 1);
    pthread_join(r, NULL);
    CHECK_EQ(abar_phase(&mono_bar), 5000);
    CHECK_EQ(abar_destroy(&mono_bar), 0);
}

/* ---- arrivals -------------------------------------------------------------- */

TEST(arrive_returns_token_of_its_phase)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t a = abar_arrive(&b);
    CHECK(tok_ok(a));
    CHECK_EQ(abar_test(&b, a), EBUSY);
    abar_token_t c = abar_current(&b);
    CHECK(same_token(a, c));
    abar_token_t a2 = abar_arrive(&b);
    CHECK(same_token(a, a2));
    CHECK_EQ(abar_test(&b, a), 0);
    abar_token_t n = abar_arrive(&b); /* phase 1 */
    CHECK(tok_ok(n));
    CHECK(!same_token(a, n));
    CHECK_EQ(abar_test(&b, n), EBUSY);
    CHECK_EQ(abar_test(&b, a), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(arrive_n_counts_n)
{
    abar_t b;
    atomic_store(&ncompl, 0);
    abar_attr_t at = { count_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 10, &at), 0);
    abar_token_t t = abar_arrive_n(&b, 4);
    CHECK(tok_ok(t));
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK(tok_ok(abar_arrive_n(&b, 5)));
    CHECK_EQ(abar_test(&b, t), EBUSY); /* 9 of 10 */
    CHECK_EQ(atomic_load(&ncompl), 0);
    CHECK(tok_ok(abar_arrive_n(&b, 1)));
    CHECK_EQ(abar_test(&b, t), 0);
    CHECK_EQ(atomic_load(&ncompl), 1);
    /* arrive_n of the whole count completes at once */
    t = abar_arrive_n(&b, 10);
    CHECK(tok_ok(t));
    CHECK_EQ(abar_test(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 2);
    CHECK_EQ(atomic_load(&ncompl), 2);
    /* arrive_n(1) is an arrive */
    for (int i = 0; i < 10; i++) t = abar_arrive_n(&b, 1);
    CHECK_EQ(abar_wait(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 3);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(arrive_n_zero_counts_nothing)
{
    abar_t b;
    atomic_store(&ncompl, 0);
    abar_attr_t at = { count_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 1, &at), 0);
    for (int i = 0; i < 5; i++) {
        abar_token_t z = abar_arrive_n(&b, 0);
        CHECK_EQ(abar_token_error(z), EINVAL);
        CHECK_EQ(abar_wait(&b, z), EINVAL);
        CHECK_EQ(abar_test(&b, z), EINVAL);
        struct timespec ts = ts_in(1000000);
        CHECK_EQ(abar_wait_until(&b, z, &ts), EINVAL);
    }
    CHECK_EQ(abar_phase(&b), 0);
    CHECK_EQ(atomic_load(&ncompl), 0);
    /* the phase still needs exactly its one arrival */
    abar_token_t t = abar_arrive(&b);
    CHECK(tok_ok(t));
    CHECK_EQ(abar_wait(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(atomic_load(&ncompl), 1);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(arrive_more_than_pending_counts_nothing)
{
    abar_t b;
    atomic_store(&ncompl, 0);
    abar_attr_t at = { count_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 4, &at), 0);
    abar_token_t bad = abar_arrive_n(&b, 5);       /* more than expected */
    CHECK_EQ(abar_token_error(bad), EINVAL);
    CHECK_EQ(abar_wait(&b, bad), EINVAL);
    CHECK_EQ(abar_test(&b, bad), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, UINT32_MAX)), EINVAL);
    abar_token_t t = abar_arrive_n(&b, 3);         /* 1 still pending */
    CHECK(tok_ok(t));
    bad = abar_arrive_n(&b, 2);                    /* more than pending */
    CHECK_EQ(abar_token_error(bad), EINVAL);
    CHECK_EQ(abar_wait(&b, bad), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, ABAR_EXPECTED_MAX)), EINVAL);
    /* nothing counted: the phase is still open, and completes with exactly
     * the one expected arrival */
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK_EQ(abar_phase(&b), 0);
    CHECK_EQ(atomic_load(&ncompl), 0);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_test(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(atomic_load(&ncompl), 1);
    /* and the next phase expects the full count again: 3 do not complete it */
    t = abar_arrive_n(&b, 3);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 2)), EINVAL);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_test(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 2);
    CHECK_EQ(atomic_load(&ncompl), 2);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(arrive_after_cancel_ecanceled)
{
    abar_t b;
    atomic_store(&ncompl, 0);
    abar_attr_t at = { count_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 2, &at), 0);
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(abar_cancel(&b), 0);
    abar_token_t a = abar_arrive(&b);
    CHECK_EQ(abar_token_error(a), ECANCELED);
    CHECK_EQ(abar_wait(&b, a), ECANCELED);
    CHECK_EQ(abar_test(&b, a), ECANCELED);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 1)), ECANCELED);
    CHECK_EQ(abar_arrive_and_wait(&b), ECANCELED);
    CHECK_EQ(abar_arrive_and_drop(&b), ECANCELED);
    CHECK_EQ(abar_token_error(abar_current(&b)), ECANCELED);
    /* nothing was counted: no completion, no phase change */
    CHECK_EQ(abar_phase(&b), 0);
    CHECK_EQ(atomic_load(&ncompl), 0);
    CHECK_EQ(abar_wait(&b, t), ECANCELED);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(arrive_on_finished_barrier)
{
    abar_t b;
    atomic_store(&ncompl, 0);
    abar_attr_t at = { count_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 2, &at), 0);
    CHECK_EQ(abar_arrive_and_drop(&b), 0);
    CHECK_EQ(abar_arrive_and_drop(&b), 0);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(atomic_load(&ncompl), 1);
    abar_token_t a = abar_arrive(&b);
    CHECK(!tok_ok(a));
    CHECK_EQ(abar_token_error(a), ECANCELED);
    CHECK_EQ(abar_wait(&b, a), abar_token_error(a));
    CHECK_EQ(abar_test(&b, a), abar_token_error(a));
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 1)), ECANCELED);
    CHECK_EQ(abar_arrive_and_drop(&b), ECANCELED);
    CHECK_EQ(abar_arrive_and_wait(&b), ECANCELED);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(atomic_load(&ncompl), 1);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(arrive_and_drop_lowers_next_phase)
{
    abar_t b;
    atomic_store(&ncompl, 0);
    abar_attr_t at = { count_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 3, &at), 0);
    /* phase 0: the drop counts as an arrival of this phase */
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(abar_arrive_and_drop(&b), 0);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_test(&b, t), 0);
    /* phase 1 expects 2 */
    t = abar_arrive(&b);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 2)), EINVAL); /* only 1 pending */
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_test(&b, t), 0);
    /* phase 2 still expects 2 (a drop lasts) */
    t = abar_arrive_n(&b, 2);
    CHECK_EQ(abar_test(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 3);
    CHECK_EQ(atomic_load(&ncompl), 3);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(all_dropped_completion_runs_then_finished)
{
    abar_t b;
    atomic_store(&ncompl, 0);
    abar_attr_t at = { count_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 3, &at), 0);
    /* phase 0: 3 -> 2, phase 1: 2 -> 1, phase 2: the last drops */
    CHECK_EQ(abar_arrive_and_drop(&b), 0);
    abar_token_t t0 = abar_arrive_n(&b, 2);
    CHECK_EQ(abar_test(&b, t0), 0);
    abar_token_t t1 = abar_arrive(&b);
    CHECK_EQ(abar_arrive_and_drop(&b), 0);
    CHECK_EQ(abar_test(&b, t1), 0);
    abar_token_t t2 = abar_current(&b);
    CHECK(tok_ok(t2));
    CHECK_EQ(abar_test(&b, t2), EBUSY);
    CHECK_EQ(atomic_load(&ncompl), 2);
    CHECK_EQ(abar_arrive_and_drop(&b), 0);   /* completes phase 2 */
    CHECK_EQ(atomic_load(&ncompl), 3);        /* the completion ran */
    CHECK_EQ(abar_phase(&b), 3);
    CHECK_EQ(abar_wait(&b, t2), 0);           /* the phase it completed completed */
    CHECK_EQ(abar_wait(&b, t0), 0);
    /* finished: arrivals refused, waits on a later phase ECANCELED */
    CHECK_EQ(abar_token_error(abar_arrive(&b)), ECANCELED);
    abar_token_t later = abar_current(&b);
    if (tok_ok(later)) {
        CHECK_EQ(abar_wait(&b, later), ECANCELED);
        CHECK_EQ(abar_test(&b, later), ECANCELED);
        struct timespec ts = ts_in(1000000000);
        CHECK_EQ(abar_wait_until(&b, later, &ts), ECANCELED);
    } else {
        CHECK_EQ(abar_token_error(later), ECANCELED);
    }
    CHECK_EQ(abar_arrive_and_wait(&b), ECANCELED);
    CHECK_EQ(atomic_load(&ncompl), 3);
    CHECK_EQ(abar_phase(&b), 3);
    CHECK_EQ(abar_destroy(&b), 0);
    /* destroy + init: fresh */
    CHECK_EQ(abar_init(&b, 1, &at), 0);
    CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK_EQ(atomic_load(&ncompl), 4);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* The finishing phase releases a thread blocked on it with 0. */
TEST(all_dropped_releases_blocked_waiter)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_t b;
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&b, 2, &at), 0);
        struct caller c;
        caller_start(&c, &b, C_CURRENT_WAIT, (abar_token_t){0, 0});
        await_inside(&b, 1);
        CHECK_EQ(abar_arrive_and_drop(&b), 0);
        msleep(5);
        CHECK(!atomic_load(&c.done));
        CHECK_EQ(abar_arrive_and_drop(&b), 0);
        CHECK_EQ(caller_join(&c), 0);
        caller_start(&c, &b, C_CURRENT_WAIT, (abar_token_t){0, 0});
        CHECK_EQ(caller_join(&c), ECANCELED);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

/* ---- tokens ---------------------------------------------------------------- */

TEST(old_token_returns_at_once)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 1, NULL), 0);
    abar_token_t first = abar_arrive(&b);
    abar_token_t t = first;
    for (int i = 0; i < 1000; i++) t = abar_arrive(&b);
    CHECK_EQ(abar_phase(&b), 1001);
    struct timespec past = ts_in(-1000000000LL), future = ts_in(5000000000LL);
    uint64_t t0 = now_ns();
    CHECK_EQ(abar_wait(&b, first), 0);
    CHECK_EQ(abar_test(&b, first), 0);
    CHECK_EQ(abar_wait_until(&b, first, &past), 0);
    CHECK_EQ(abar_wait_until(&b, first, &future), 0);
    CHECK_EQ(abar_wait(&b, t), 0);
    CHECK(now_ns() - t0 < 1000000000u);
    CHECK_EQ(abar_destroy(&b), 0);

    /* many phases old through the phase hook: starting at the state word's
     * wrap, 2^21, the futex word's wrap 2^32, 2^40 and 2^62 */
    const uint64_t starts[] = { UINT64_C(1) << ST_PHASE_BITS, UINT64_C(1) << 21,
                                UINT64_C(1) << 32, UINT64_C(1) << 40, UINT64_C(1) << 62 };
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        uint64_t S = starts[i];
        CHECK_EQ(abar_init(&b, 2, NULL), 0);
        abar_token_t t5 = abar_arrive_n(&b, 2);  /* phase 0 */
        CHECK_EQ(abar_phase(&b), 1);
        CHECK_EQ(abar_init(&b, 2, NULL), 0);     /* new identity: t5 is foreign now */
        CHECK_EQ(abar__test_set_phase(&b, S), 0);
        CHECK_EQ(abar_phase(&b), S);
        CHECK_EQ(abar_wait(&b, t5), EINVAL);
        /* a token of phase S, then advance by exactly 2^21 and 2^21 + 1 more */
        abar_token_t tS = abar_arrive(&b);
        CHECK_EQ(tS.raw, S); /* white box: the token names its phase */
        CHECK_EQ(abar_test(&b, tS), EBUSY);
        CHECK(tok_ok(abar_arrive(&b)));
        CHECK_EQ(abar_phase(&b), S + 1);
        CHECK_EQ(abar_wait(&b, tS), 0);
        CHECK_EQ(abar_wait_until(&b, tS, &past), 0);
        /* a token of this phase while incomplete */
        abar_token_t cur = abar_arrive(&b);
        CHECK_EQ(abar_test(&b, cur), EBUSY);
        CHECK_EQ(abar_wait_until(&b, cur, &past), ETIMEDOUT);
        CHECK(tok_ok(abar_arrive(&b)));
        CHECK_EQ(abar_wait(&b, cur), 0);
        CHECK_EQ(abar_test(&b, tS), 0);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

TEST(old_token_exactly_one_state_wrap_old)
{
    /* The state word keeps the phase modulo 2^ST_PHASE_BITS: a token exactly
     * that many phases old has the same low bits as the current phase. */
    const uint64_t W = UINT64_C(1) << ST_PHASE_BITS;
    abar_t b;
    abar_token_t old;
    /* a 2-count barrier whose current phase is open and shares the token's
     * low bits */
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    old = abar_arrive(&b);
    abar_token_t cur0 = abar_arrive(&b);
    CHECK(same_token(old, cur0));
    for (uint64_t i = 1; i < W; i++) (void)abar_arrive_n(&b, 2);
    abar_token_t now = abar_arrive(&b);             /* phase W, open */
    CHECK_EQ(abar_phase(&b), W);
    CHECK_EQ(phase_lo(now.raw), phase_lo(old.raw)); /* white box: same low bits */
    CHECK_EQ(abar_test(&b, now), EBUSY);
    CHECK_EQ(abar_test(&b, old), 0);
    struct timespec past = ts_in(-1);
    CHECK_EQ(abar_wait_until(&b, old, &past), 0);
    CHECK_EQ(abar_wait(&b, old), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(foreign_token_einval)
{
    abar_t a, b;
    CHECK_EQ(abar_init(&a, 2, NULL), 0);
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t ta = abar_arrive(&a);          /* both at phase 0 */
    abar_token_t tb = abar_arrive(&b);
    CHECK(ta.id != tb.id);
    struct timespec past = ts_in(-1), future = ts_in(1000000000);
    CHECK_EQ(abar_wait(&b, ta), EINVAL);
    CHECK_EQ(abar_test(&b, ta), EINVAL);
    CHECK_EQ(abar_wait_until(&b, ta, &past), EINVAL);
    CHECK_EQ(abar_wait_until(&b, ta, &future), EINVAL);
    /* a completed phase of a: still foreign to b */
    CHECK(tok_ok(abar_arrive(&a)));
    CHECK_EQ(abar_test(&a, ta), 0);
    CHECK_EQ(abar_wait(&b, ta), EINVAL);
    /* b unchanged: still one arrival pending in phase 0 */
    CHECK_EQ(abar_phase(&b), 0);
    CHECK_EQ(abar_test(&b, tb), EBUSY);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_wait(&b, tb), 0);
    CHECK_EQ(abar_phase(&b), 1);
    /* two barriers inited at the same address one after the other: see
     * token_before_reinit_einval */
    CHECK_EQ(abar_destroy(&a), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(token_before_reinit_einval)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t open = abar_arrive(&b);       /* phase 0, open */
    abar_token_t cur = abar_current(&b);
    CHECK_EQ(abar_destroy(&b), 0);
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    CHECK_EQ(abar_wait(&b, open), EINVAL);
    CHECK_EQ(abar_test(&b, open), EINVAL);
    CHECK_EQ(abar_wait(&b, cur), EINVAL);
    struct timespec ts = ts_in(1000000000);
    CHECK_EQ(abar_wait_until(&b, open, &ts), EINVAL);
    /* a completed phase's token of the old life: EINVAL too */
    abar_token_t done = abar_arrive_n(&b, 2);
    CHECK_EQ(abar_test(&b, done), 0);
    CHECK_EQ(abar_init(&b, 2, NULL), 0);       /* re-init without destroy */
    CHECK_EQ(abar_wait(&b, done), EINVAL);
    CHECK_EQ(abar_test(&b, done), EINVAL);
    /* the new barrier is untouched: fresh phase 0, two arrivals pending */
    CHECK_EQ(abar_phase(&b), 0);
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_test(&b, t), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(forged_token_einval)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t real = abar_arrive(&b);
    struct timespec ts = ts_in(1000000000);
    /* the right identity, a phase no arrive returned yet */
    abar_token_t f = real;
    f.raw = real.raw + 1;
    CHECK_EQ(abar_wait(&b, f), EINVAL);
    CHECK_EQ(abar_test(&b, f), EINVAL);
    CHECK_EQ(abar_wait_until(&b, f, &ts), EINVAL);
    f.raw = UINT64_MAX;
    CHECK_EQ(abar_wait(&b, f), EINVAL);
    /* a made-up identity */
    f = real;
    f.id ^= 0x5a5a5a5a5a5a5a5aull;
    CHECK_EQ(abar_wait(&b, f), EINVAL);
    CHECK_EQ(abar_test(&b, f), EINVAL);
    f.id = 1;
    CHECK_EQ(abar_wait(&b, f), EINVAL);
    /* the barrier unchanged */
    CHECK_EQ(abar_phase(&b), 0);
    CHECK_EQ(abar_test(&b, real), EBUSY);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_wait(&b, real), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* A zero-filled token (the commonest forgery: an uninitialised or
 * memset token) and tokens whose identity is 0 but whose error field holds
 * a value no call returns.  SPEC: "forged: EINVAL at once". */
TEST(forged_token_zero_identity_einval)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t real = abar_arrive(&b);
    const uint64_t raws[] = { 0, 1, 12345, UINT64_MAX, (uint64_t)EBUSY, (uint64_t)ETIMEDOUT };
    for (size_t i = 0; i < sizeof raws / sizeof raws[0]; i++) {
        abar_token_t f = { .raw = raws[i], .id = 0 };
        int w = abar_wait(&b, f), te = abar_test(&b, f);
        if (w != EINVAL || te != EINVAL) {
            fprintf(stderr, "token {raw=%llu, id=0}: abar_wait -> %d, abar_test -> %d, want EINVAL (%d)\n",
                    (unsigned long long)raws[i], w, te, EINVAL);
            _exit(1);
        }
    }
    CHECK_EQ(abar_test(&b, real), EBUSY);
    CHECK_EQ(abar_destroy(&b), 0);
}

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
    if (heap) {
        void *p = NULL;
        CHECK_EQ(posix_memalign(&p, 64, sizeof(abar_t)), 0);
        return p;
    }
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    return p;
}
static void free_release(struct freeable *f)
{
    int r = abar_destroy(f->b);
    if (r != 0) {
        fprintf(stderr, "last thread out: abar_destroy -> %d, want 0\n", r);
        _exit(1);
    }
    if (f->heap) free(f->b);
    else munmap(f->b, 4096);
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

/* Destroy racing with a thread entering abar_wait: either destroy says EBUSY
 * (the waiter is counted, and returns once the phase completes), or it
 * returns 0 and the waiter must not block on the dead barrier (it returns
 * EINVAL).  A waiter that registers after destroy's check and then sleeps on
 * the destroyed barrier would hang here. */
static abar_t race_bar;
static abar_token_t race_tok;
static _Atomic int race_go, race_ready, race_go2, race_ret;
static void *race_waiter(void *arg)
{
    (void)arg;
    for (int round = 1;; round++) {
        int g;
        while ((g = atomic_load(&race_go)) < round) {
            if (g < 0) return NULL;
        }
        /* handshake, so that both threads are on a CPU at the moment of the race */
        atomic_store(&race_ready, round);
        while (atomic_load(&race_go2) < round) {}
        atomic_store(&race_ret, abar_wait(&race_bar, race_tok) + 1000);
    }
}

TEST(destroy_racing_wait_entry_never_strands_waiter)
{
    pthread_t w;
    pthread_create(&w, NULL, race_waiter, NULL);
    int busy = 0, zero = 0;
    int delay = 0; /* dithered to where destroy meets the waiter's entry */
    uint64_t t_end = now_ns() + 2000000000u;
    for (int round = 1; now_ns() < t_end; round++) {
        abar_attr_t at = { NULL, NULL, POLICIES[round % 3] };
        CHECK_EQ(abar_init(&race_bar, 2, &at), 0);
        race_tok = abar_arrive(&race_bar);
        atomic_store(&race_ret, 0);
        atomic_store(&race_go, round);
        /* the waiter spins on race_go2: sweep the destroy across its entry
         * into abar_wait (it sees the store some 100 ns later) */
        while (atomic_load(&race_ready) < round) {}
        atomic_store(&race_go2, round);
        for (volatile int spin = delay; spin > 0; spin--) {}
        int d = abar_destroy(&race_bar);
        if (d == EBUSY) {
            busy++;
            CHECK(tok_ok(abar_arrive(&race_bar)));
            delay = delay * 7 / 8;             /* the waiter was in: destroy earlier */
        } else {
            CHECK_EQ(d, 0);
            zero++;
            delay = delay * 5 / 4 + 8;         /* it was not yet: destroy later */
        }
        uint64_t t0 = now_ns();
        while (atomic_load(&race_ret) == 0) {
            if (now_ns() - t0 > 2000000000u) {
                fprintf(stderr, "round %d (%d EBUSY, %d destroyed so far): destroy returned %d, "
                        "and the waiter has not returned from abar_wait 2 s later (it registered "
                        "after destroy's check and sleeps on the destroyed barrier; inside=%u)\n",
                        round, busy, zero, d, inside_of(&race_bar));
                _exit(1);
            }
            sched_yield();
        }
        int r = atomic_load(&race_ret) - 1000;
        if (d == EBUSY) CHECK_EQ(r, 0);
        else if (r != EINVAL) {
            fprintf(stderr, "round %d: wait racing a successful destroy returned %d\n", round, r);
            _exit(1);
        }
        if (d == EBUSY) CHECK_EQ(abar_destroy(&race_bar), 0);
    }
    atomic_store(&race_go, -1);
    pthread_join(w, NULL);
    printf("  destroy: %d EBUSY, %d succeeded\n", busy, zero);
}

/* ---- init on a busy barrier -------------------------------------------------- */

static abar_t busy_bar;
static int busy_init_ret = -1, busy_destroy_ret = -1;
static void busy_completion(void *arg)
{
    (void)arg;
    busy_init_ret = abar_init(&busy_bar, 1, NULL);
    busy_destroy_ret = abar_destroy(&busy_bar);
}

TEST(init_on_busy_barrier_ebusy)
{
    /* a thread blocked in a wait */
    for (int pi = 0; pi < 3; pi++) {
        for (int k = 0; k < C_NKINDS; k++) {
            abar_attr_t at = { NULL, NULL, POLICIES[pi] };
            CHECK_EQ(abar_init(&busy_bar, 2, &at), 0);
            abar_token_t t = {0, 0};
            if (k != C_ARRIVE_AND_WAIT) t = abar_arrive(&busy_bar);
            struct caller c;
            caller_start(&c, &busy_bar, k, t);
            await_inside(&busy_bar, 1);
            CHECK_EQ(abar_init(&busy_bar, 2, &at), EBUSY);
            CHECK_EQ(abar_init(&busy_bar, 5, NULL), EBUSY);
            msleep(2);
            CHECK_EQ(abar_init(&busy_bar, 2, &at), EBUSY);
            /* undisturbed */
            CHECK(!atomic_load(&c.done));
            CHECK_EQ(abar_phase(&busy_bar), 0);
            if (k == C_CURRENT_WAIT) CHECK(tok_ok(abar_arrive(&busy_bar)));
            CHECK(tok_ok(abar_arrive(&busy_bar)));
            CHECK_EQ(caller_join(&c), 0);
            CHECK_EQ(abar_phase(&busy_bar), 1);
            CHECK_EQ(abar_init(&busy_bar, 2, &at), 0); /* idle again: allowed */
        }
    }
    /* a completion running */
    abar_attr_t at = { busy_completion, NULL, 0 };
    CHECK_EQ(abar_init(&busy_bar, 1, &at), 0);
    abar_token_t t = abar_arrive(&busy_bar);
    CHECK_EQ(busy_init_ret, EBUSY);
    CHECK_EQ(busy_destroy_ret, EBUSY);
    CHECK_EQ(abar_wait(&busy_bar, t), 0);
    CHECK_EQ(abar_phase(&busy_bar), 1);
    CHECK_EQ(abar_destroy(&busy_bar), 0);
}

/* ---- signals ------------------------------------------------------------------ */

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

/* ---- completion function ------------------------------------------------------ */

struct cinfo {
    abar_t *self, *other;
    _Atomic int runs;
    pthread_t ran_on;
    uint64_t phase_inside;
    int cancel_ret, wait_ret, wait_until_ret, test_ret, aaw_ret, own_arrive_err;
    abar_token_t other_tok;
    int sleep_ms;
    _Atomic int finished;
};

static void cfn_record(void *arg)
{
    struct cinfo *ci = arg;
    ci->ran_on = pthread_self();
    ci->phase_inside = abar_phase(ci->self);
    if (ci->sleep_ms) msleep(ci->sleep_ms);
    atomic_fetch_add(&ci->runs, 1);
    atomic_store(&ci->finished, 1);
}

TEST(completion_runs_once_on_last_arriver)
{
    abar_t b;
    struct cinfo ci;
    memset(&ci, 0, sizeof ci);
    ci.self = &b;
    abar_attr_t at = { cfn_record, &ci, 0 };
    CHECK_EQ(abar_init(&b, 3, &at), 0);
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(atomic_load(&ci.runs), 0);
    struct caller c;
    caller_start(&c, &b, C_ARRIVE_AND_WAIT, t); /* second arrival, from another thread */
    await_inside(&b, 1);
    await_pending(&b, 1);
    CHECK_EQ(atomic_load(&ci.runs), 0);
    CHECK(tok_ok(abar_arrive(&b)));             /* last: this thread */
    CHECK_EQ(atomic_load(&ci.runs), 1);
    CHECK(pthread_equal(ci.ran_on, pthread_self()));
    CHECK_EQ(ci.phase_inside, 0);               /* still the completing phase */
    CHECK_EQ(caller_join(&c), 0);
    /* now the other thread is last */
    CHECK(tok_ok(abar_arrive_n(&b, 2)));
    caller_start(&c, &b, C_ARRIVE_AND_WAIT, t);
    CHECK_EQ(caller_join(&c), 0);
    CHECK_EQ(atomic_load(&ci.runs), 2);
    CHECK(pthread_equal(ci.ran_on, c.th));
    CHECK_EQ(ci.phase_inside, 1);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(completion_finished_before_completing_call_returns)
{
    /* arrive, arrive_n, arrive_and_drop, arrive_and_wait, and a released waiter */
    for (int how = 0; how < 4; how++) {
        abar_t b;
        struct cinfo ci;
        memset(&ci, 0, sizeof ci);
        ci.self = &b;
        ci.sleep_ms = 30;
        abar_attr_t at = { cfn_record, &ci, 0 };
        CHECK_EQ(abar_init(&b, 3, &at), 0);
        abar_token_t t = abar_arrive(&b);
        struct caller c;
        caller_start(&c, &b, C_WAIT, t);
        await_inside(&b, 1);
        CHECK(tok_ok(abar_arrive(&b)));
        int r = 0;
        switch (how) {
        case 0: r = abar_token_error(abar_arrive(&b)); break;
        case 1: CHECK(tok_ok(abar_arrive_n(&b, 1))); break;
        case 2: r = abar_arrive_and_drop(&b); break;
        case 3: r = abar_arrive_and_wait(&b); break;
        }
        CHECK_EQ(r, 0);
        if (!atomic_load(&ci.finished)) {
            fprintf(stderr, "completing call %d returned before its completion finished\n", how);
            _exit(1);
        }
        CHECK_EQ(caller_join(&c), 0);
        CHECK_EQ(atomic_load(&ci.runs), 1);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

/* Writes before each arrive are visible in the completion; the completion's
 * writes are visible to every released waiter (plain, non-atomic memory:
 * TSan checks the happens-before edges). */
enum { VIS_T = 4, VIS_ROUNDS = 2000 };
static abar_t vis_bar;
static long vis_in[VIS_T];
static long vis_out;
static void vis_completion(void *arg)
{
    (void)arg;
    long sum = 0;
    for (int i = 0; i < VIS_T; i++) sum += vis_in[i];
    vis_out = sum;
}
static void *vis_worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (long r = 1; r <= VIS_ROUNDS; r++) {
        vis_in[me] = r * (me + 1);
        CHECK_EQ(abar_arrive_and_wait(&vis_bar), 0);
        long want = r * VIS_T * (VIS_T + 1) / 2;
        if (vis_out != want) {
            fprintf(stderr, "round %ld, thread %d: completion wrote %ld, want %ld\n", r, me,
                    vis_out, want);
            _exit(1);
        }
        CHECK_EQ(abar_arrive_and_wait(&vis_bar), 0); /* nobody rewrites vis_in before all read */
    }
    return NULL;
}

TEST(completion_sees_arrivals_waiters_see_completion)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_attr_t at = { vis_completion, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&vis_bar, VIS_T, &at), 0);
        pthread_t th[VIS_T];
        for (int i = 0; i < VIS_T; i++) pthread_create(&th[i], NULL, vis_worker, (void *)(intptr_t)i);
        for (int i = 0; i < VIS_T; i++) pthread_join(th[i], NULL);
        CHECK_EQ(abar_phase(&vis_bar), 2 * VIS_ROUNDS);
        CHECK_EQ(abar_destroy(&vis_bar), 0);
    }
}

static int other_completions;
static void other_completion(void *arg)
{
    (void)arg;
    other_completions++;
}
static void cfn_calls(void *arg)
{
    struct cinfo *ci = arg;
    atomic_fetch_add(&ci->runs, 1);
    ci->phase_inside = abar_phase(ci->self);
    ci->cancel_ret = abar_cancel(ci->self);
    ci->other_tok = abar_arrive(ci->other); /* completes `other` (expected 1): nested completion */
    ci->wait_ret = abar_wait(ci->other, ci->other_tok);
}

TEST(completion_can_call_phase_cancel_and_arrive_other)
{
    abar_t b, o;
    struct cinfo ci;
    memset(&ci, 0, sizeof ci);
    ci.self = &b;
    ci.other = &o;
    abar_attr_t at = { cfn_calls, &ci, 0 };
    abar_attr_t ot = { other_completion, NULL, 0 };
    CHECK_EQ(abar_init(&b, 2, &at), 0);
    CHECK_EQ(abar_init(&o, 1, &ot), 0);
    abar_token_t t = abar_arrive(&b);
    struct caller c;
    caller_start(&c, &b, C_WAIT, t); /* a waiter blocked on the phase being cancelled */
    await_inside(&b, 1);
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(atomic_load(&ci.runs), 1);
    CHECK_EQ(ci.phase_inside, 0);
    CHECK_EQ(ci.cancel_ret, 0);
    CHECK(tok_ok(ci.other_tok));
    CHECK_EQ(ci.wait_ret, 0);
    CHECK_EQ(other_completions, 1);
    CHECK_EQ(abar_phase(&o), 1);
    /* the phase whose completion cancelled still completes */
    CHECK_EQ(caller_join(&c), 0);
    CHECK_EQ(abar_wait(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 1);
    /* the cancel holds for what follows */
    CHECK_EQ(abar_token_error(abar_arrive(&b)), ECANCELED);
    CHECK_EQ(atomic_load(&ci.runs), 1);
    CHECK_EQ(abar_destroy(&b), 0);
    CHECK_EQ(abar_destroy(&o), 0);
}

static void cfn_wait_own(void *arg)
{
    struct cinfo *ci = arg;
    atomic_fetch_add(&ci->runs, 1);
    abar_token_t cur = abar_current(ci->self);
    ci->wait_ret = abar_wait(ci->self, cur);
    struct timespec ts = ts_in(2000000000);
    ci->wait_until_ret = abar_wait_until(ci->self, cur, &ts);
    ci->test_ret = abar_test(ci->self, cur);
    ci->aaw_ret = abar_arrive_and_wait(ci->self);
    ci->own_arrive_err = abar_token_error(abar_arrive(ci->self));
}

TEST(completion_wait_own_barrier_edeadlk)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_t b;
        struct cinfo ci;
        memset(&ci, 0, sizeof ci);
        ci.self = &b;
        abar_attr_t at = { cfn_wait_own, &ci, POLICIES[pi] };
        CHECK_EQ(abar_init(&b, 2, &at), 0);
        abar_token_t t = abar_arrive(&b);
        uint64_t t0 = now_ns();
        CHECK(tok_ok(abar_arrive(&b)));
        CHECK(now_ns() - t0 < 1000000000u); /* not a 2 s timed wait */
        CHECK_EQ(atomic_load(&ci.runs), 1);
        CHECK_EQ(ci.wait_ret, EDEADLK);
        CHECK_EQ(ci.wait_until_ret, EDEADLK);
        /* arrive_and_wait on its own barrier from inside: refused, never blocks
         * (the phase has no arrival left to count) */
        CHECK(ci.aaw_ret == EDEADLK || ci.aaw_ret == EINVAL);
        CHECK_EQ(ci.own_arrive_err, EINVAL);
        CHECK_EQ(abar_wait(&b, t), 0);
        CHECK_EQ(abar_phase(&b), 1);
        /* nothing counted into the next phase by those calls */
        abar_token_t n = abar_arrive(&b);
        CHECK_EQ(abar_test(&b, n), EBUSY);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

/* A completion of B running inside the completion of A (A's completion
 * arrives on B): waiting on A from there can never succeed either. */
static abar_t nest_a, nest_b;
static int nest_ret = -1;
static void nest_b_completion(void *arg)
{
    (void)arg;
    nest_ret = abar_wait(&nest_a, abar_current(&nest_a));
}
static void nest_a_completion(void *arg)
{
    (void)arg;
    (void)abar_arrive(&nest_b);
}

static _Atomic int nest_done;
static void *nest_thread(void *arg)
{
    (void)arg;
    (void)abar_arrive(&nest_a); /* runs A's completion, which runs B's */
    atomic_store(&nest_done, 1);
    return NULL;
}

TEST(completion_nested_wait_outer_edeadlk)
{
    abar_attr_t aa = { nest_a_completion, NULL, 0 }, ab = { nest_b_completion, NULL, ABAR_WAIT_PARK };
    CHECK_EQ(abar_init(&nest_a, 1, &aa), 0);
    CHECK_EQ(abar_init(&nest_b, 1, &ab), 0);
    pthread_t th;
    pthread_create(&th, NULL, nest_thread, NULL);
    uint64_t t0 = now_ns();
    while (!atomic_load(&nest_done)) {
        if (now_ns() - t0 > 3000000000u) {
            fprintf(stderr, "abar_wait(A) from B's completion, nested in A's completion on the "
                    "same thread, still blocked after 3 s (self-deadlock; want EDEADLK)\n");
            _exit(1);
        }
        msleep(2);
    }
    pthread_join(th, NULL);
    CHECK_EQ(nest_ret, EDEADLK);
    CHECK_EQ(abar_phase(&nest_a), 1);
    CHECK_EQ(abar_phase(&nest_b), 1);
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

/* ---- NULL and never-initialised barriers -------------------------------------- */

TEST(null_pointers_einval)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 1, NULL), 0);
    abar_token_t t = abar_arrive(&b);
    struct timespec ts = ts_in(1000000);
    CHECK_EQ(abar_init(NULL, 1, NULL), EINVAL);
    CHECK_EQ(abar_destroy(NULL), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive(NULL)), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive_n(NULL, 1)), EINVAL);
    CHECK_EQ(abar_token_error(abar_current(NULL)), EINVAL);
    CHECK_EQ(abar_arrive_and_drop(NULL), EINVAL);
    CHECK_EQ(abar_wait(NULL, t), EINVAL);
    CHECK_EQ(abar_wait_until(NULL, t, &ts), EINVAL);
    CHECK_EQ(abar_wait_until(NULL, t, NULL), EINVAL);
    CHECK_EQ(abar_wait_until(&b, t, NULL), EINVAL);
    CHECK_EQ(abar_test(NULL, t), EINVAL);
    CHECK_EQ(abar_arrive_and_wait(NULL), EINVAL);
    CHECK_EQ(abar_cancel(NULL), EINVAL);
    CHECK_EQ(abar_phase(NULL), 0);
    CHECK_EQ(abar_wait(&b, t), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(uninitialised_barrier_einval)
{
    abar_t b;
    memset(&b, 0, sizeof b);
    abar_token_t t = { 0, 1 };
    CHECK_EQ(abar_destroy(&b), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive(&b)), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 3)), EINVAL);
    CHECK_EQ(abar_token_error(abar_current(&b)), EINVAL);
    CHECK_EQ(abar_arrive_and_drop(&b), EINVAL);
    CHECK_EQ(abar_wait(&b, t), EINVAL);
    CHECK_EQ(abar_test(&b, t), EINVAL);
    CHECK_EQ(abar_arrive_and_wait(&b), EINVAL);
    CHECK_EQ(abar_cancel(&b), EINVAL);
    CHECK_EQ(abar_phase(&b), 0);
    memset(&b, 0xa5, sizeof b); /* garbage */
    CHECK_EQ(abar_destroy(&b), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive(&b)), EINVAL);
    CHECK_EQ(abar_phase(&b), 0);
    CHECK_EQ(abar_init(&b, 1, NULL), 0); /* init over garbage works */
    CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* ---- phase counter wrap boundaries (via the test hook) ------------------------- */

/* T threads run `phases` phases starting at `start`, with parked, spinning
 * and split waiters; checks abar_phase and the tokens at every step. */
enum { WRAP_T = 3 };
static abar_t wrap_bar;
static uint64_t wrap_start;
static int wrap_phases;
static void *wrap_worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    abar_token_t prev = {0, 0};
    for (int i = 0; i < wrap_phases; i++) {
        abar_token_t t = abar_arrive(&wrap_bar);
        CHECK(tok_ok(t));
        if (t.raw != wrap_start + (uint64_t)i) {
            fprintf(stderr, "thread %d step %d: token phase %llu, want %llu\n", me, i,
                    (unsigned long long)t.raw, (unsigned long long)(wrap_start + (uint64_t)i));
            _exit(1);
        }
        struct timespec ts = ts_in(5000000000LL);
        int r = me == 0 ? abar_wait(&wrap_bar, t) : abar_wait_until(&wrap_bar, t, &ts);
        CHECK_EQ(r, 0);
        /* the next phase needs this thread's arrival: exactly one more */
        CHECK_EQ(abar_phase(&wrap_bar), wrap_start + (uint64_t)i + 1);
        if (i > 0) CHECK_EQ(abar_test(&wrap_bar, prev), 0);
        prev = t;
    }
    return NULL;
}

static void run_wrap(uint64_t start, int phases)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&wrap_bar, WRAP_T, &at), 0);
        CHECK_EQ(abar__test_set_phase(&wrap_bar, start), 0);
        CHECK_EQ(abar_phase(&wrap_bar), start);
        abar_token_t first = abar_current(&wrap_bar);
        wrap_start = start;
        wrap_phases = phases;
        pthread_t th[WRAP_T];
        for (int i = 0; i < WRAP_T; i++) pthread_create(&th[i], NULL, wrap_worker, (void *)(intptr_t)i);
        for (int i = 0; i < WRAP_T; i++) pthread_join(th[i], NULL);
        CHECK_EQ(abar_phase(&wrap_bar), start + (uint64_t)phases);
        CHECK_EQ(abar_test(&wrap_bar, first), 0);
        abar_token_t last = abar_current(&wrap_bar);
        CHECK_EQ(abar_test(&wrap_bar, last), EBUSY);
        struct timespec past = ts_in(-1);
        CHECK_EQ(abar_wait_until(&wrap_bar, last, &past), ETIMEDOUT);
        CHECK_EQ(abar_destroy(&wrap_bar), 0);
    }
}

TEST(phase_wrap_2p21)
{
    run_wrap((UINT64_C(1) << 21) - 20, 40);
    run_wrap((UINT64_C(2) << 21) - 3, 6);
    /* and the state word's own wrap, whatever its width */
    run_wrap((UINT64_C(1) << ST_PHASE_BITS) - 20, 40);
    run_wrap((UINT64_C(3) << ST_PHASE_BITS) - 3, 6);
}

TEST(phase_wrap_2p32)
{
    run_wrap((UINT64_C(1) << 32) - 20, 40);
    run_wrap((UINT64_C(1) << 31) - 3, 6);
}

TEST(phase_near_2p64)
{
    /* up to the last phase number (2^64 - 1 phases: centuries at 1 ns each) */
    run_wrap(UINT64_MAX - 30, 30);
    CHECK_EQ(abar_init(&wrap_bar, 1, NULL), 0);
    CHECK_EQ(abar__test_set_phase(&wrap_bar, UINT64_MAX - 1), 0);
    abar_token_t t = abar_arrive(&wrap_bar);
    CHECK_EQ(abar_phase(&wrap_bar), UINT64_MAX);
    CHECK_EQ(abar_wait(&wrap_bar, t), 0);
    CHECK_EQ(abar_destroy(&wrap_bar), 0);
}

TEST(test_set_phase_hook_only_on_fresh_barrier)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 1, NULL), 0);
    (void)abar_arrive(&b);
    CHECK_EQ(abar__test_set_phase(&b, 100), EBUSY);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(abar_destroy(&b), 0);
    CHECK_EQ(abar__test_set_phase(&b, 100), EINVAL);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
