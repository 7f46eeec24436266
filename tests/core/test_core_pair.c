/*
 * test_core_pair.c - a barrier of one or two without a completion function
 * (ABAR__TICKET: each single arrival is one add of HALF, the second of a
 * phase carries into the phase bits; arrive.c abar__ticket_slow,
 * abar_internal.h abar__ticket_arrive): counting, drops, arrive_n, cancel,
 * refused adds taken back, the phase-bits wrap, and two threads.
 *
 * White-box checks (the state word) run only where the barrier counts with
 * the add.  A pair never has leaves (a tree has two or more leaves of
 * about four units: tree.c), even in the _tree run; the guard keeps the
 * cases honest should that change.
 */
#include "core_api.h"

static bool ticket(abar_t *b) { return I(b)->flags & ABAR__TICKET; }
static uint64_t state_of(abar_t *b) { return atomic_load(&I(b)->state); }

/* Two arrivals a phase from one thread: the first leaves HALF set, the
 * second carries: the phase advances, the count is whole again. */
TEST(pair_add_counts_and_carries)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    for (uint64_t p = 0; p < 1000; p++) {
        abar_token_t t0 = abar_arrive(&b);
        CHECK(tok_ok(t0));
        CHECK_EQ(t0.raw, p);
        CHECK_EQ(abar_test(&b, t0), EBUSY);
        if (ticket(&b)) {
            CHECK(state_of(&b) & ST_HALF);
            CHECK_EQ(st_pending(state_of(&b)), 1);
        }
        abar_token_t t1 = abar_arrive(&b);
        CHECK(tok_ok(t1));
        CHECK_EQ(t1.raw, p);
        CHECK_EQ(abar_test(&b, t0), 0);
        CHECK_EQ(abar_phase(&b), p + 1);
        if (ticket(&b)) CHECK_EQ(state_of(&b), st_make(p + 1, 2, 0));
    }
    CHECK_EQ(abar_destroy(&b), 0);
}

/* A drop first: the other arrival completes the phase the general way, and
 * from then on the barrier expects one: each arrival completes a phase
 * (a barrier of one: two adds).  The last participant's drop finishes it. */
TEST(pair_drop_first_then_one)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    CHECK_EQ(abar_arrive_and_drop(&b), 0);
    CHECK_EQ(abar_phase(&b), 0);
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(t.raw, 0);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(atomic_load(&I(&b)->expected), 1);
    for (uint64_t p = 1; p < 500; p++) {
        t = abar_arrive(&b);
        CHECK_EQ(t.raw, p);
        CHECK_EQ(abar_phase(&b), p + 1);
        if (ticket(&b)) CHECK_EQ(state_of(&b), st_make(p + 1, 1, 0));
    }
    CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK_EQ(abar_phase(&b), 501);
    CHECK_EQ(abar_arrive_and_drop(&b), 0); /* completes phase 501; finished after it */
    CHECK_EQ(abar_phase(&b), 502);
    CHECK_EQ(abar_token_error(abar_arrive(&b)), ECANCELED);
    CHECK_EQ(abar_arrive_and_wait(&b), ECANCELED);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 1)), ECANCELED);
    CHECK_EQ(abar_phase(&b), 502);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* A drop second: it completes the phase (pending 1 with HALF set, to 0). */
TEST(pair_drop_second)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(abar_arrive_and_drop(&b), 0);
    CHECK_EQ(abar_test(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(atomic_load(&I(&b)->expected), 1);
    if (ticket(&b)) CHECK_EQ(state_of(&b), st_make(1, 1, 0));
    CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK_EQ(abar_phase(&b), 2);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* arrive_n beside the adds: all or nothing, refused whole when the phase
 * expects fewer, and the state untouched by a refusal. */
TEST(pair_arrive_n_beside_adds)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t t = abar_arrive_n(&b, 2);
    CHECK_EQ(t.raw, 0);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 3)), EINVAL);
    t = abar_arrive(&b);
    uint64_t s = state_of(&b);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 2)), EINVAL); /* one pending */
    CHECK_EQ(state_of(&b), s);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK(tok_ok(abar_arrive_n(&b, 1)));
    CHECK_EQ(abar_test(&b, t), 0);
    CHECK_EQ(abar_phase(&b), 2);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* Arrivals after a cancel are refused and leave the state as it was (the
 * add taken back, including a carry it made); the first arrival's phase
 * fails; destroy finds no transient. */
TEST(pair_cancel_refused_adds_taken_back)
{
    for (int first = 0; first < 2; first++) {
        abar_t b;
        CHECK_EQ(abar_init(&b, 2, NULL), 0);
        abar_token_t t = first ? abar_arrive(&b) : abar_current(&b);
        CHECK(tok_ok(t));
        CHECK_EQ(abar_cancel(&b), 0);
        uint64_t s = state_of(&b);
        for (int i = 0; i < 5; i++) {
            CHECK_EQ(abar_token_error(abar_arrive(&b)), ECANCELED);
            CHECK_EQ(abar_arrive_and_wait(&b), ECANCELED);
            CHECK_EQ(state_of(&b), s);
        }
        CHECK_EQ(abar_phase(&b), 0);
        CHECK_EQ(abar_wait(&b, t), ECANCELED);
        CHECK_EQ(abar_destroy(&b), 0);
    }
}

/* What keeps a refused add harmless: an add that finds a completing phase
 * (pending 0, HALF set) is refused and taken back, carry and all; an add
 * that finds the phase bits ahead of `phase` (such an add's transient,
 * before it is taken back) is refused too.  Both states are made by hand. */
TEST(pair_arrivals_refused_on_a_completing_state_change_nothing)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    if (!ticket(&b)) {
        printf("  (the pair does not count with the add here)\n");
        CHECK(tok_ok(abar_arrive_n(&b, 2)));
        CHECK_EQ(abar_destroy(&b), 0);
        return;
    }
    CHECK_EQ(abar__test_set_phase(&b, 7), 0);
    /* a phase whose other arrival dropped, completed by an add: pending 0 */
    const uint64_t completing = st_make(7, 1, 0) + ST_DROP_ONE + ST_HALF;
    atomic_store(&I(&b)->state, completing);
    CHECK_EQ(abar_token_error(abar_arrive(&b)), EINVAL);
    CHECK_EQ(state_of(&b), completing);
    CHECK_EQ(abar_arrive_and_drop(&b), EINVAL);
    CHECK_EQ(abar_arrive_and_wait(&b), EINVAL);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 1)), EINVAL);
    CHECK_EQ(state_of(&b), completing);
    CHECK_EQ(abar_phase(&b), 7);
    /* back to an open phase 7: counted again */
    atomic_store(&I(&b)->state, st_make(7, 2, 0));
    CHECK(tok_ok(abar_arrive(&b)));
    CHECK_EQ(abar_arrive_and_wait(&b), 0);
    CHECK_EQ(abar_phase(&b), 8);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* The carry out of the top of the 18 phase bits (and near 2^64): tokens and
 * abar_phase stay exact. */
TEST(pair_carry_across_phase_bits_wrap)
{
    const uint64_t starts[] = { (UINT64_C(1) << ST_PHASE_BITS) - 3, (UINT64_C(5) << ST_PHASE_BITS) - 2,
                                UINT64_MAX - 5 };
    for (int k = 0; k < 3; k++) {
        for (uint32_t e = 1; e <= 2; e++) {
            abar_t b;
            CHECK_EQ(abar_init(&b, e, NULL), 0);
            CHECK_EQ(abar__test_set_phase(&b, starts[k]), 0);
            for (uint64_t i = 0; i < 5; i++) {
                abar_token_t t = abar_arrive(&b);
                CHECK_EQ(t.raw, starts[k] + i);
                if (e == 2) CHECK_EQ(abar_arrive(&b).raw, starts[k] + i);
                CHECK_EQ(abar_phase(&b), starts[k] + i + 1);
                CHECK_EQ(abar_test(&b, t), 0);
            }
            CHECK_EQ(abar_destroy(&b), 0);
        }
    }
}

/* The first arrival of a phase whose state has PARKED set (a waiter parked
 * in it, here set by hand) is neither of the add's two usual outcomes, so
 * abar_arrive_and_wait hands it to abar__ticket_slow: it must still wait
 * for the second arrival, and the second must carry the phase and clear
 * PARKED.  Every policy, and each thread in its second and later call
 * (the pair's own path needs the thread's hazard record). */
static abar_t pk_bar;
static _Atomic int pk_done, pk_ret;
static void *pk_first(void *arg)
{
    (void)arg;
    claim_hazard_record();
    atomic_store(&pk_ret, abar_arrive_and_wait(&pk_bar));
    atomic_store(&pk_done, 1);
    return NULL;
}
TEST(pair_first_arrival_finding_parked_waits)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&pk_bar, 2, &at), 0);
        if (!ticket(&pk_bar)) return;
        atomic_fetch_or(&I(&pk_bar)->state, ST_PARKED);
        atomic_store(&pk_done, 0);
        atomic_store(&pk_ret, -1);
        pthread_t t;
        pthread_create(&t, NULL, pk_first, NULL);
        while (st_pending(state_of(&pk_bar)) != 1) sched_yield(); /* it has arrived */
        msleep(20);
        CHECK(!atomic_load(&pk_done)); /* still waiting for the second arrival */
        CHECK_EQ(abar_phase(&pk_bar), 0);
        CHECK_EQ(abar_arrive_and_wait(&pk_bar), 0); /* carries, over PARKED */
        pthread_join(t, NULL);
        CHECK_EQ(atomic_load(&pk_ret), 0);
        CHECK_EQ(abar_phase(&pk_bar), 1);
        CHECK(!(state_of(&pk_bar) & ST_PARKED));
        CHECK_EQ(abar_destroy(&pk_bar), 0);
    }
}

/* Two threads, every policy, arrive_and_wait and split arrive/wait mixed;
 * at a set phase one thread drops and the other goes on alone (a barrier
 * of one), while an observer waits on the phases by abar_current, so the
 * adds meet PARKED. */
static abar_t two_bar;
static _Atomic int two_stop;
enum { TWO_PHASES = 20000, TWO_DROP_AT = 15000 };
static void *two_worker(void *arg)
{
    const int me = (int)(intptr_t)arg;
    for (uint64_t p = 0; p < TWO_PHASES; p++) {
        if (me == 1 && p == TWO_DROP_AT) {
            CHECK_EQ(abar_arrive_and_drop(&two_bar), 0);
            return NULL;
        }
        if (p % 3 == 0) {
            abar_token_t t = abar_arrive(&two_bar);
            CHECK(tok_ok(t));
            if (t.raw != p) {
                fprintf(stderr, "thread %d: token %llu at step %llu\n", me, (unsigned long long)t.raw,
                        (unsigned long long)p);
                _exit(1);
            }
            CHECK_EQ(abar_wait(&two_bar, t), 0);
        } else {
            CHECK_EQ(abar_arrive_and_wait(&two_bar), 0);
        }
        if (abar_phase(&two_bar) < p + 1) {
            fprintf(stderr, "thread %d: phase %llu after step %llu\n", me,
                    (unsigned long long)abar_phase(&two_bar), (unsigned long long)p);
            _exit(1);
        }
    }
    return NULL;
}
static void *two_observer(void *arg)
{
    (void)arg;
    long released = 0;
    while (!atomic_load(&two_stop)) {
        abar_token_t t = abar_current(&two_bar);
        CHECK(tok_ok(t));
        struct timespec ts = ts_in(20000000);
        int r = abar_wait_until(&two_bar, t, &ts);
        CHECK(r == 0 || r == ETIMEDOUT);
        released += r == 0;
    }
    return (void *)(intptr_t)released;
}
TEST(pair_two_threads_drop_and_observer)
{
    for (int pi = 0; pi < 3; pi++) {
        abar_attr_t at = { NULL, NULL, POLICIES[pi] };
        CHECK_EQ(abar_init(&two_bar, 2, &at), 0);
        atomic_store(&two_stop, 0);
        pthread_t w[2], ob;
        pthread_create(&ob, NULL, two_observer, NULL);
        for (int i = 0; i < 2; i++) pthread_create(&w[i], NULL, two_worker, (void *)(intptr_t)i);
        for (int i = 0; i < 2; i++) pthread_join(w[i], NULL);
        atomic_store(&two_stop, 1);
        void *res;
        pthread_join(ob, &res);
        CHECK_EQ(abar_phase(&two_bar), TWO_PHASES);
        CHECK_EQ(atomic_load(&I(&two_bar)->expected), 1);
        printf("  %-7s: %d phases, observer released %ld times\n", policy_name(POLICIES[pi]), TWO_PHASES,
               (long)(intptr_t)res);
        CHECK_EQ(abar_destroy(&two_bar), 0);
    }
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
