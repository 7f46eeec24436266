/*
 * ctor_lib.c - libctor_barrier.so: a library whose constructor uses a
 * pthread barrier (init, wait alone at count 1, wait with a thread of its own
 * at count 2, destroy), linked into dropin.c's program (DT_NEEDED).  Its
 * constructor runs before the program's and, under LD_PRELOAD, before any
 * constructor of the preloaded library.  It records what each call returned.
 */
#define _GNU_SOURCE
#include <pthread.h>

int ctor_barrier_results[8];
int ctor_barrier_ran;

static pthread_barrier_t b1, b2;
static int helper_result = -1;

static void *helper(void *arg)
{
    (void)arg;
    helper_result = pthread_barrier_wait(&b2);
    return NULL;
}

__attribute__((constructor)) static void ctor_uses_a_barrier(void)
{
    int *r = ctor_barrier_results;
    r[0] = pthread_barrier_init(&b1, NULL, 1);
    r[1] = pthread_barrier_wait(&b1);
    r[2] = pthread_barrier_destroy(&b1);
    r[3] = pthread_barrier_init(&b2, NULL, 2);
    pthread_t t;
    r[4] = pthread_create(&t, NULL, helper, NULL);
    r[5] = r[4] == 0 ? pthread_barrier_wait(&b2) : -1;
    if (r[4] == 0) pthread_join(t, NULL);
    r[6] = helper_result;
    r[7] = pthread_barrier_destroy(&b2);
    ctor_barrier_ran = 1;
}
