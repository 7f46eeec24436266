/* test_smoke.c - the basic life of a barrier, across threads and policies. */
#include "harness.h"
#include <abar.h>
#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>

enum { T = 4, PHASES = 5000 }; /* T may exceed the CPUs: spinners must yield */
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

/* Racing over-arrivals: 6 threads keep arriving on a barrier that expects 3
 * a phase.  Every counted arrival is in exactly one phase, every phase counts
 * exactly 3, and the refused ones change nothing. */
static abar_t race;
static _Atomic long race_counted;
static long race_completions;
static void race_complete(void *arg) { (void)arg; race_completions++; }
static void *race_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        abar_token_t t = i % 3 ? abar_arrive(&race) : abar_arrive_n(&race, 1 + i % 2);
        int e = abar_token_error(t);
        if (e == 0) atomic_fetch_add(&race_counted, i % 3 ? 1 : 1 + i % 2);
        else if (e != EINVAL) _exit(6);
    }
    return NULL;
}
TEST(racing_over_arrivals_count_exactly)
{
    abar_attr_t a = { race_complete, NULL, 0 };
    CHECK_EQ(abar_init(&race, 3, &a), 0);
    pthread_t th[6];
    for (int i = 0; i < 6; i++) pthread_create(&th[i], NULL, race_worker, NULL);
    for (int i = 0; i < 6; i++) pthread_join(th[i], NULL);
    uint64_t ph = abar_phase(&race);
    abar_token_t cur = abar_current(&race);
    CHECK_EQ(abar_test(&race, cur), EBUSY);
    /* what the open phase still expects: arrive one at a time until it completes */
    long open = 0;
    while (abar_phase(&race) == ph) { CHECK_EQ(abar_token_error(abar_arrive(&race)), 0); open++; }
    CHECK_EQ(race_completions, (long)ph + 1);
    CHECK_EQ(atomic_load(&race_counted) + open, 3 * ((long)ph + 1));
    CHECK(ph > 100);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
