/*
 * test_core_wrap.c - phase counter wrap boundaries (2^21, 2^32, near
 * 2^64) through the test hook abar__test_set_phase.
 * Each case is named after the SPEC row (or the call) it checks; see
 * tests/README.md for the row -> case table.
 */
#include "core_api.h"

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
