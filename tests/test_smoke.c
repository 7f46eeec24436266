/* test_smoke.c - the basic life of a barrier, across threads and policies. */
#include "harness.h"
#include <abar.h>
#include <pthread.h>
#include <stdatomic.h>

enum { T = 4, PHASES = 20000 };
static abar_t bar;
static _Atomic long counter;
static long completions;

static void on_complete(void *arg)
{
    (void)arg;
    completions++;
    /* every arrival of this phase is visible: counter == T * completions */
    if (atomic_load_explicit(&counter, memory_order_relaxed) != T * completions) _exit(3);
}

static void *worker(void *arg)
{
    (void)arg;
    for (long i = 0; i < PHASES; i++) {
        atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
        if (abar_arrive_and_wait(&bar) != 0) _exit(4);
        /* after the wait, the whole phase is visible */
        if (atomic_load_explicit(&counter, memory_order_relaxed) < T * (i + 1)) _exit(5);
    }
    return NULL;
}

static void run_policy(unsigned flags)
{
    abar_attr_t a = { on_complete, NULL, flags };
    counter = 0; completions = 0;
    CHECK_EQ(abar_init(&bar, T, &a), 0);
    pthread_t th[T];
    for (int i = 0; i < T; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    CHECK_EQ(completions, PHASES);
    CHECK_EQ(abar_phase(&bar), PHASES);
    CHECK_EQ(abar_destroy(&bar), 0);
}

TEST(threads_default) { run_policy(0); }
TEST(threads_spin) { run_policy(ABAR_WAIT_SPIN); }
TEST(threads_park) { run_policy(ABAR_WAIT_PARK); }

TEST(single_thread_split)
{
    abar_t b;
    CHECK_EQ(abar_init(&b, 2, NULL), 0);
    abar_token_t t = abar_arrive(&b);
    CHECK_EQ(abar_test(&b, t), EBUSY);
    abar_token_t t2 = abar_arrive(&b);
    CHECK_EQ(abar_test(&b, t), 0);
    CHECK_EQ(abar_wait(&b, t2), 0);
    CHECK_EQ(abar_phase(&b), 1);
    CHECK_EQ(abar_destroy(&b), 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
