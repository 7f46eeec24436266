/* team_pool.c - the persistent pool of worker threads: its life, its size,
 * and the dispatch of a launch to its workers.
 *
 * Worker 0 is the thread that calls abar_run; workers 1..P-1 are pool
 * threads that wait for the next launch.  A launch (team_run.c):
 *   caller: validate, prepare the slots, publish the launch, bump `gen`;
 *   every worker: see `gen` move, run its part (or none), arrive on `done`;
 *   caller: run its own part, arrive on `done` and wait for its phase.
 * Workers wait for `gen` spinning briefly (the core's budget, ABAR_SPIN_NS),
 * then sleeping on a futex; in a pool with more threads than CPUs they sleep
 * at once.  Without a configured size the pool grows to the largest cluster
 * a launch needs.  The start is one word every worker reads; the join is a
 * core barrier (abar_t), whose arrival tree gathers P arrivals in a few line
 * transfers where one shared counter would take P in turn. */
#define _GNU_SOURCE
#include "abar_internal.h"
#include "os.h"
#include "team_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER; /* one launch at a time */
static struct abar__pool *pool;                                 /* under pool_lock */
static unsigned cfg_threads;                                    /* 0: default, grows; else a hard cap */
static unsigned cfg_flags;
static bool cfg_set;                                            /* configure() was called */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* ---- sizes from the environment -------------------------------------------- */

static unsigned env_uint(const char *name, unsigned dflt, unsigned max)
{
    const char *e = getenv(name);
    if (e == NULL || *e == '\0') return dflt;
    char *end;
    unsigned long v = strtoul(e, &end, 10);
    if (*end != '\0' || v == 0 || v > max) return dflt;
    return (unsigned)v;
}

/* The CPUs this process may run on (its affinity mask), else the online ones. */
static unsigned usable_cpus(void)
{
    int n = abar__os_cpus(NULL, 0);
    unsigned v = n > 0 ? (unsigned)n : abar__ncpu();
    return v < ABAR_POOL_THREADS_MAX ? v : ABAR_POOL_THREADS_MAX;
}

static unsigned want_threads(void)
{
    if (cfg_threads) return cfg_threads;
    return env_uint("ABAR_POOL_THREADS", usable_cpus(), ABAR_POOL_THREADS_MAX);
}

static unsigned want_flags(void)
{
    if (cfg_set) return cfg_flags;
    return env_uint("ABAR_POOL_PIN", 0, 1) ? ABAR_POOL_PIN : 0;
}

/* The pool's waits spin for its budget (p->spin_ns) before they sleep:
 * true once moved(p, v) holds within it. */
static inline bool spin_until(struct abar__pool *p, bool (*moved)(struct abar__pool *, uint64_t),
                              uint64_t v)
{
    uint64_t budget = p->spin_ns, t0 = budget ? abar__now_ns() : 0;
    for (unsigned i = 1; budget; i++) {
        if (moved(p, v)) return true;
        abar__pause();
        if (i % 64 == 0 && abar__now_ns() - t0 >= budget) break;
    }
    return false;
}

/* acquire: the launch the caller published before its store of gen */
static inline bool gen_moved(struct abar__pool *p, uint64_t g)
{
    return atomic_load_explicit(&p->gen, memory_order_acquire) != (uint32_t)g;
}

/* Returns once gen is no longer g: spins for the budget, then sleeps.
 * seq_cst on sleepers and gen here, and on the caller's store of gen and load
 * of sleepers: either we see the new gen, or the caller sees us and wakes us. */
static void wait_gen(struct abar__pool *p, uint32_t g)
{
    if (spin_until(p, gen_moved, g)) return;
    atomic_fetch_add(&p->sleepers, 1);
    while (atomic_load(&p->gen) == g) (void)abar__futex_wait(&p->gen, g, false, NULL);
    atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_relaxed);
}

static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    struct abar__pool *p = wk->pool;
    uint32_t g = 0; /* workers start before the first launch */
    for (;;) {
        wait_gen(p, g);
        g = atomic_load_explicit(&p->gen, memory_order_acquire);
        /* No launch can follow before this worker's arrival on `done`
         * below: gen moved exactly once. */
        if (p->quit) return NULL;
        p->part(p, wk->index, p->base);
        /* A release: this worker's part happens before the caller's wait on
         * `done` returns.  The token is not needed: only the caller waits.
         * No launch can start before the phase completes, so this arrival
         * always counts in the launch it ran. */
        (void)abar_arrive(&p->done);
    }
}

/* The caller waits for the launch's `done` phase t: it polls for the spin
 * budget, then parks (`done` is ABAR_WAIT_PARK).  The pool's own budget,
 * as for `gen`, and not the core's adaptive wait: one phase a launch, with
 * the kernel's imbalance in it, would feed the core's wait policy signs
 * and rates that say nothing of the host (policy.c). */
static inline bool done_moved(struct abar__pool *p, uint64_t raw)
{
    /* acquire (in abar_phase): every worker's part.  raw is the phase the
     * caller's token names; only the release line is read. */
    return abar_phase(&p->done) > raw;
}

static void wait_done(struct abar__pool *p, abar_token_t t)
{
    if (!spin_until(p, done_moved, t.raw)) (void)abar_wait(&p->done, t);
}

/* Starts launch p->L: every worker sees it after this. */
static void start_launch(struct abar__pool *p)
{
    /* seq_cst (a release): the launch is seen by a worker that sees the new
     * gen; and it orders with the load of sleepers. */
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers)) abar__futex_wake_all(&p->gen, false);
}

/* ---- the pool's life ------------------------------------------------------------ */

static void pool_free(struct abar__pool *p)
{
    if (p == NULL) return;
    /* The slots' and teams' barriers (their workers stopped: none is in
     * use): a barrier of 5 threads or more holds an arrival tree.  One
     * never initialised is zero, which destroy refuses (EINVAL). */
    for (unsigned i = 0; p->slots && p->teams && i < p->nthreads; i++) {
        (void)abar_destroy(&p->slots[i].cbar);
        (void)abar_destroy(&p->slots[i].sbar);
        (void)abar_destroy(&p->teams[i].tbar);
    }
    (void)abar_destroy(&p->done); /* EINVAL if never initialised */
    free(p->workers);
    free(p->cpu);
    free(p->grp);
    free(p->slot_of);
    free(p->rank_of);
    free(p->slots);
    free(p->teams);
    free(p->xflags);
    free(p->shm);
    pthread_mutex_destroy(&p->launch.lock);
    free(p);
}

/* Stops workers 1..started-1 of p and joins them. */
static void pool_stop(struct abar__pool *p, unsigned started)
{
    p->quit = true;
    atomic_fetch_add(&p->gen, 1); /* release: quit is seen with the new gen */
    abar__futex_wake_all(&p->gen, false);
    for (unsigned w = 1; w < started; w++) pthread_join(p->workers[w].tid, NULL);
}

static void *zalloc_aligned(size_t n)
{
    n = (n + 63) / 64 * 64;
    void *m = aligned_alloc(64, n ? n : 64);
    if (m) memset(m, 0, n ? n : 64);
    return m;
}

static void at_fork_child(void)
{
    /* The pool's threads do not exist in the child: forget it (its memory
     * stays allocated) and start afresh at the next launch. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pool_lock = fresh;
    pool = NULL;
    abar__team_self = NULL;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, at_fork_child); }

/* Starts a pool of want_threads() threads, or `least` if that is more. */
static int pool_start(struct abar__pool **out, unsigned least)
{
    unsigned n = want_threads();
    if (n < least) n = least;
    struct abar__pool *p = calloc(1, sizeof *p);
    if (p == NULL) return ENOMEM;
    p->nthreads = n;
    p->flags = want_flags();
    p->workers = calloc(n, sizeof *p->workers);
    p->grp = calloc(n, sizeof *p->grp);
    p->slot_of = calloc(n, sizeof *p->slot_of);
    p->rank_of = calloc(n, sizeof *p->rank_of);
    p->slots = zalloc_aligned((size_t)n * sizeof *p->slots);
    p->teams = zalloc_aligned((size_t)n * sizeof *p->teams);
    p->xflags = zalloc_aligned((size_t)n * sizeof *p->xflags);
    int ncpu = abar__os_cpus(NULL, 0);
    p->cpu = calloc((size_t)ncpu, sizeof *p->cpu);
    int *cpus = calloc((size_t)ncpu, sizeof *cpus);
    int *cgrp = calloc((size_t)ncpu, sizeof *cgrp);
    if (!p->workers || !p->grp || !p->slot_of || !p->rank_of || !p->slots || !p->teams || !p->xflags ||
        !p->cpu || !cpus || !cgrp || pthread_mutex_init(&p->launch.lock, NULL) != 0) {
        free(cpus);
        free(cgrp);
        pool_free(p);
        return ENOMEM;
    }
    ncpu = abar__os_cpus(cpus, ncpu);
    p->ncpu = ncpu;
    (void)abar__team_topology("/sys/devices/system/cpu", cpus, ncpu, p->cpu, cgrp);
    for (unsigned w = 0; w < n; w++) p->grp[w] = cgrp[w % (unsigned)ncpu] + (int)(w / (unsigned)ncpu) * ncpu;
    free(cpus);
    free(cgrp);

    /* Spinning while waiting only pays when every pool thread has a CPU;
     * oversubscribed, the pool's waits and every launch barrier park. */
    p->spin_ns = n <= (unsigned)ncpu ? abar__spin_ns() : 0;
    p->wait_flags = n <= (unsigned)ncpu ? 0 : ABAR_WAIT_PARK;
    /* Four turns of every thread sharing a CPU (the core's rule for a
     * barrier larger than the machine). */
    p->yield_rounds = n <= (unsigned)ncpu ? 0 : 4 * ((n + (unsigned)ncpu - 1) / (unsigned)ncpu);
    p->epoch = 1;
    if (abar_init(&p->done, n, &(abar_attr_t){ NULL, NULL, ABAR_WAIT_PARK }) != 0) {
        pool_free(p);
        return ENOMEM;
    }
    int err = 0;
    unsigned w;
    for (w = 1; w < n; w++) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        if (p->flags & ABAR_POOL_PIN) (void)abar__os_pin(&a, p->cpu[w % (unsigned)ncpu]);
        p->workers[w] = (struct worker){ .index = w, .pool = p };
        err = pthread_create(&p->workers[w].tid, &a, worker_main, &p->workers[w]);
        pthread_attr_destroy(&a);
        if (err) break;
    }
    if (err) {
        pool_stop(p, w);
        pool_free(p);
        return EAGAIN;
    }
    *out = p;
    return 0;
}

static void pool_end(void)
{
    if (pool == NULL) return;
    pool_stop(pool, pool->nthreads);
    pool_free(pool);
    pool = NULL;
}

/* ---- the public calls ------------------------------------------------------------ */

int abar_pool_configure(unsigned threads, unsigned flags)
{
    if (flags & ~ABAR_POOL_PIN || threads > ABAR_POOL_THREADS_MAX) return EINVAL;
    if (abar__team_self) return EDEADLK;
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&pool_lock);
    cfg_threads = threads;
    cfg_flags = flags;
    cfg_set = true;
    if (pool && (pool->nthreads != want_threads() || pool->flags != flags)) pool_end();
    pthread_mutex_unlock(&pool_lock);
    return 0;
}

unsigned abar_pool_threads(void)
{
    /* Inside a kernel the caller's launch holds the lock, and its pool is
     * fixed until the launch ends. */
    if (abar__team_self) return pool->nthreads;
    pthread_mutex_lock(&pool_lock);
    unsigned n = pool ? pool->nthreads : want_threads();
    pthread_mutex_unlock(&pool_lock);
    return n;
}

int abar_pool_shutdown(void)
{
    if (abar__team_self) return EDEADLK;
    pthread_mutex_lock(&pool_lock);
    pool_end();
    pthread_mutex_unlock(&pool_lock);
    return 0;
}

/* ---- for abar_run (team_run.c) ---------------------------------------------------- */

int abar__pool_enter(unsigned need, struct abar__pool **out)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&pool_lock);
    /* Without a configured size the pool grows (a new, larger pool; it stays
     * that size); with one, abar_run's check says E2BIG above it. */
    int err = 0;
    if (pool && pool->nthreads < need && cfg_threads == 0) pool_end();
    if (pool == NULL && (err = pool_start(&pool, cfg_threads ? 0 : need)) != 0) {
        pthread_mutex_unlock(&pool_lock);
        return err;
    }
    *out = pool;
    return 0;
}

void abar__pool_leave(void) { pthread_mutex_unlock(&pool_lock); }

void abar__pool_dispatch(struct abar__pool *p, abar__pool_part_fn *part)
{
    if (p->part != part) p->part = part; /* published by start_launch's release */
    /* relaxed: uniqueness only; published by start_launch's release. */
    p->base = atomic_fetch_add_explicit(&p->residencies, p->L->K, memory_order_relaxed) + 1;
    start_launch(p);
    part(p, 0, p->base);
    /* acquire (in the wait): every worker's part, and the abort code. */
    wait_done(p, abar_arrive(&p->done));
}
