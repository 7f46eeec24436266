/*
 * test_core_completion.c - the completion function: once a phase, on the
 * last arriver, what it sees and what it may call (SPEC section 2).
 * Each case is named after the SPEC row (or the call) it checks; see
 * tests/README.md for the row -> case table.
 */
#include "core_api.h"

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

int main(int argc, char **argv) { return harness_main(argc, argv); }
