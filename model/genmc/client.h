/*
 * client.h - what the clients share: the core (core.h), threads, and the
 * checks.  Plain (non-atomic) data written before an arrival and read
 * after the matching wait is the visibility check: GenMC reports a data
 * race where the barrier does not order the two, and the asserts check
 * the values.
 *
 * Build knobs (run.sh passes them): N threads, COMPLETION (the barrier
 * gets a completion function), FLAGS (the barrier's attr.flags; default
 * ABAR_WAIT_PARK: waiters park at once, so every wait is bounded), TREE
 * (the tree's threshold lowered to N, as ABAR_TREE_MIN=N would).
 */
#ifndef ABAR_GENMC_CLIENT_H
#define ABAR_GENMC_CLIENT_H

#include "core.h"

#ifndef N
#define N 2
#endif
#ifndef FLAGS
#define FLAGS ABAR_WAIT_PARK
#endif

#define CHECK(x) assert(x)

static pthread_t threads[N];

static inline void spawn_all(void *(*fn)(void *))
{
    for (intptr_t i = 0; i < N; i++) pthread_create(&threads[i], NULL, fn, (void *)i);
}

static inline void join_all(void)
{
    for (int i = 0; i < N; i++) pthread_join(threads[i], NULL);
}

static inline void client_setup(void)
{
    abar_genmc_setup();
#ifdef TREE
    atomic_store_explicit(&tree_min_cache, (uint32_t)N, memory_order_relaxed);
#endif
}

#endif
