/*
 * test_core_tree.c - the arrival tree of a wide barrier (src/core/tree.c):
 * which barriers get leaves, arrive_n all or nothing across leaves, one
 * thread filling every leaf, drops that shrink the quotas until leaves have
 * none, cancel, and arrive_n racing single arrivals.
 *
 * Every other core test also runs with ABAR_TREE_MIN=2 (CTest `*_tree`), so
 * the whole API is checked on leaves too.
 */
#include "core_api.h"

static bool tree_min_default(void)
{
    const char *e = getenv("ABAR_TREE_MIN");
    return e == NULL || *e == '\0';
}

static unsigned completions;
static void count_phase(void *arg)
{
    (void)arg;
    completions++;
}

TEST(leaves_only_where_wide_and_private)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 16, NULL), 0);
    CHECK(I(&b)->leaves != NULL);
    CHECK_EQ(abar__nleaves(I(&b)), 4u);
    CHECK_EQ(abar_destroy(&b), 0);
    CHECK(I(&b)->leaves == NULL);
    CHECK_EQ(abar_init(&b, ABAR_EXPECTED_MAX, NULL), 0);
    CHECK_EQ(abar__nleaves(I(&b)), 128u);
    CHECK_EQ(abar_destroy(&b), 0);
    CHECK_EQ(abar_init(&b, 16, &(abar_attr_t){ .flags = ABAR_PSHARED }), 0);
    CHECK(I(&b)->leaves == NULL); /* the leaves would live outside the shared mapping */
    CHECK_EQ(abar_destroy(&b), 0);
    if (tree_min_default()) { /* leaves from 5 expected (ABAR__TREE_MIN) */
        CHECK_EQ(abar_init(&b, 4, NULL), 0);
        CHECK(I(&b)->leaves == NULL);
        CHECK_EQ(abar_destroy(&b), 0);
    }
    /* leaves of 2 up to 10 expected, of 4 above */
    const uint32_t sizes[][2] = { { 5, 3 }, { 8, 4 }, { 10, 5 }, { 11, 3 }, { 12, 3 }, { 13, 4 } };
    for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        CHECK_EQ(abar_init(&b, sizes[i][0], NULL), 0);
        CHECK_EQ(abar__nleaves(I(&b)), sizes[i][1]);
        CHECK_EQ(abar_destroy(&b), 0);
    }
    /* re-initialised without a destroy: the old leaves are freed (ASan/valgrind) */
    CHECK_EQ(abar_init(&b, 32, NULL), 0);
    CHECK_EQ(abar_init(&b, 32, NULL), 0);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(arrive_n_all_or_nothing_across_leaves)
{
    abar_t b;
    completions = 0;
    CHECK_EQ(abar_init(&b, 16, &(abar_attr_t){ .completion = count_phase }), 0);
    CHECK(I(&b)->leaves != NULL);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 17)), EINVAL);
    abar_token_t t = abar_arrive_n(&b, 10); /* spans three leaves of 4 */
    CHECK_EQ(abar_token_error(t), 0);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 7)), EINVAL); /* 6 left: nothing counted */
    for (int i = 0; i < 5; i++) CHECK_EQ(abar_token_error(abar_arrive(&b)), 0);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 2)), EINVAL);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    CHECK_EQ(completions, 0u);
    abar_token_t u = abar_arrive(&b);
    CHECK_EQ(completions, 1u);
    CHECK_EQ(abar_wait(&b, t), 0);
    CHECK_EQ(abar_wait(&b, u), 0);
    CHECK_EQ(abar_phase(&b), 1u);
    /* the next phase in one call, then one more arrival counts in phase 2 */
    CHECK_EQ(abar_wait(&b, abar_arrive_n(&b, 16)), 0);
    CHECK_EQ(abar_phase(&b), 2u);
    CHECK_EQ(completions, 2u);
    CHECK_EQ(abar_token_error(abar_arrive(&b)), 0);
    CHECK_EQ(abar_phase(&b), 2u);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(one_thread_fills_every_leaf)
{
    abar_t b;
    completions = 0;
    CHECK_EQ(abar_init(&b, 13, &(abar_attr_t){ .completion = count_phase }), 0);
    for (unsigned phase = 0; phase < 50; phase++) {
        abar_token_t t = { 0, 0 };
        for (int i = 0; i < 13; i++) {
            t = abar_arrive(&b);
            CHECK_EQ(abar_token_error(t), 0);
        }
        CHECK_EQ(abar_wait(&b, t), 0);
        CHECK_EQ(abar_phase(&b), phase + 1);
    }
    CHECK_EQ(completions, 50u);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* expected 9: five leaves, of 2 and one of 1; a drop each phase shrinks
 * the quotas until leaves have none, then the last drop finishes the
 * barrier. */
TEST(drops_shrink_quotas_to_nothing)
{
    abar_t b;
    completions = 0;
    CHECK_EQ(abar_init(&b, 9, &(abar_attr_t){ .completion = count_phase }), 0);
    CHECK_EQ(abar__nleaves(I(&b)), 5u);
    for (uint32_t e = 9; e >= 1; e--) {
        CHECK_EQ(atomic_load(&I(&b)->expected), e);
        for (uint32_t i = 1; i < e; i++) CHECK_EQ(abar_token_error(abar_arrive(&b)), 0);
        CHECK_EQ(abar_arrive_and_drop(&b), 0);
        CHECK_EQ(abar_phase(&b), (uint64_t)(10 - e));
    }
    CHECK_EQ(completions, 9u);
    CHECK_EQ(abar_token_error(abar_arrive(&b)), ECANCELED); /* finished */
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 2)), ECANCELED);
    CHECK_EQ(abar_destroy(&b), 0);
}

TEST(cancel_refuses_and_fails_the_open_phase)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 12, NULL), 0);
    abar_token_t t = abar_arrive_n(&b, 5);
    abar_token_t u = abar_arrive(&b);
    CHECK_EQ(abar_cancel(&b), 0);
    CHECK_EQ(abar_token_error(abar_arrive(&b)), ECANCELED);
    CHECK_EQ(abar_token_error(abar_arrive_n(&b, 3)), ECANCELED);
    CHECK_EQ(abar_wait(&b, t), ECANCELED);
    CHECK_EQ(abar_wait(&b, u), ECANCELED);
    CHECK_EQ(abar_phase(&b), 0u);
    CHECK_EQ(abar_destroy(&b), 0);
}

/* Three threads race arrive_n(5) and a fourth one arrive on a barrier of 12:
 * exactly two of the three fit (10, then 1 or 2 free), the single always
 * fits, and 11 < 12 keeps the phase open, so the refusal is certain.  The
 * main thread's arrival and the single's then complete the phase.  Many
 * rounds. */
struct race { abar_t b; _Atomic int refused, go; unsigned rounds; };
static void *racer(void *arg)
{
    struct race *r = arg;
    for (unsigned k = 0; k < r->rounds; k++) {
        while (atomic_load(&r->go) <= (int)k) sched_yield();
        abar_token_t t = abar_arrive_n(&r->b, 5);
        if (abar_token_error(t) == EINVAL) atomic_fetch_add(&r->refused, 1);
        else CHECK_EQ(abar_token_error(t), 0);
    }
    return NULL;
}
static void *single(void *arg)
{
    struct race *r = arg;
    for (unsigned k = 0; k < r->rounds; k++) {
        while (atomic_load(&r->go) <= (int)k) sched_yield();
        CHECK_EQ(abar_token_error(abar_arrive(&r->b)), 0);
    }
    return NULL;
}
TEST(arrive_n_races_single_arrivals)
{
    static struct race r;
    r.rounds = 2000 / (unsigned)harness_slow();
    completions = 0;
    CHECK_EQ(abar_init(&r.b, 12, &(abar_attr_t){ .completion = count_phase }), 0);
    pthread_t th[4];
    for (int i = 0; i < 3; i++) CHECK_EQ(pthread_create(&th[i], NULL, racer, &r), 0);
    CHECK_EQ(pthread_create(&th[3], NULL, single, &r), 0);
    for (unsigned k = 0; k < r.rounds; k++) {
        atomic_store(&r.go, (int)k + 1);
        /* wait for the four contenders: one refusal, 11 units taken */
        while (atomic_load(&r.refused) != (int)k + 1) sched_yield();
        CHECK_EQ(abar_phase(&r.b), (uint64_t)k);
        /* 10 or 11 units taken (the single may still be on its way) */
        abar_token_t t = abar_arrive(&r.b);
        CHECK_EQ(abar_token_error(t), 0);
        CHECK_EQ(abar_wait(&r.b, t), 0);
        CHECK_EQ(abar_phase(&r.b), (uint64_t)k + 1);
    }
    for (int i = 0; i < 4; i++) CHECK_EQ(pthread_join(th[i], NULL), 0);
    CHECK_EQ(atomic_load(&r.refused), (int)r.rounds);
    CHECK_EQ(completions, r.rounds);
    CHECK_EQ(abar_destroy(&r.b), 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
