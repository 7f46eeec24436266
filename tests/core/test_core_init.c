/*
 * test_core_init.c - abar_init and its refusals, the phase counter,
 * init on a busy barrier, NULL and never-initialised barriers (SPEC section 2).
 * Each case is named after the SPEC row (or the call) it checks; see
 * tests/README.md for the row -> case table.
 */
#include "core_api.h"

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
    return (void *)(intptr_t)n;
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

int main(int argc, char **argv) { return harness_main(argc, argv); }
