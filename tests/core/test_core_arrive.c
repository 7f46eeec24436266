/*
 * test_core_arrive.c - arrivals (arrive, arrive_n, arrive_and_drop) and
 * tokens (old, foreign, forged, from before a re-init) (SPEC section 2).
 * Each case is named after the SPEC row (or the call) it checks; see
 * tests/README.md for the row -> case table.
 */
#include "core_api.h"

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

int main(int argc, char **argv) { return harness_main(argc, argv); }
