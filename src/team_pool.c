/* team_pool.c - the persistent pool of worker threads and abar_run.
 *
 * Worker 0 is the thread that calls abar_run; workers 1..P-1 are pool
 * threads parked on the `start` barrier between launches.  A launch:
 *   caller: validate, set up the slots, publish the launch, arrive on `start`;
 *   every worker: run its part (or none), arrive on `done`;
 *   caller: wait on `done`, return the abort code.
 * Both are core barriers, so waiting spins briefly, then parks. */
#define _GNU_SOURCE
#include "abar_internal.h"
#include "team_internal.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct worker {
    pthread_t tid;
    unsigned index;
    abar_token_t first;        /* `start`'s phase 0, taken before the thread runs */
    struct abar__pool *pool;
};

struct abar__pool {
    unsigned nthreads;         /* P, the caller included */
    unsigned flags;
    abar_t start;              /* expected 1: the caller's arrival starts a launch */
    abar_t done;               /* expected P: every worker's arrival ends it */
    struct abar__launch *L;    /* the current launch (read after `start`) */
    bool quit;                 /* read after `start`: leave the loop */
    struct worker *workers;
    int *cpu;                  /* worker w runs on cpu[w % ncpu] when pinned */
    int *grp;                  /* cache group of worker w */
    int ncpu;
    /* Cached per launch shape: the cut of workers into slots. */
    unsigned place_C, place_K;
    int *slot_of, *rank_of;
    /* Grow-only storage for the slots, teams and shared memory. */
    struct abar__launch launch;
    struct abar__slot *slots;  /* P of them */
    struct abar__team *teams;  /* P of them */
    unsigned char *shm;
    size_t shm_bytes;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER; /* one launch at a time */
static struct abar__pool *pool;                                 /* under pool_lock */
static unsigned cfg_threads;                                    /* 0: default */
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
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
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

/* ---- one worker's part of a launch --------------------------------------------- */

static void run_cluster(struct abar__slot *s, unsigned r, abar_thread_t *self)
{
    struct abar__launch *L = s->L;
    unsigned ts = L->cfg.team_size;
    *self = (abar_thread_t){
        .L = L, .slot = s, .team = &s->teams[r / ts],
        .thread_rank = r % ts,
        .cluster_rank = r / ts,
        .cluster_index = s->cluster,
        .team_rank = s->cluster * L->cfg.cluster_size + r / ts,
    };
    abar__team_self = self;
    L->kernel(self, L->arg);
    abar__team_self = NULL;
    abar__team_exit(self);
}

/* sbar's completion: every thread of the slot has left the previous cluster;
 * set the slot up for the next (or stop after an abort). */
static void next_wave(void *arg)
{
    struct abar__slot *s = arg;
    struct abar__launch *L = s->L;
    pthread_mutex_lock(&L->lock);
    /* relaxed: abort stores the code before taking the lock we hold. */
    if (atomic_load_explicit(&L->abort_code, memory_order_relaxed) != 0) {
        s->stop = true;
    } else {
        s->cluster += L->K;
        if (abar__team_init_cluster(s) != 0) s->stop = true; /* cannot happen */
    }
    pthread_mutex_unlock(&L->lock);
}

static void run_part(struct abar__pool *p, unsigned w)
{
    struct abar__launch *L = p->L;
    int k = p->slot_of[w];
    if (k < 0 || (unsigned)k >= L->K) return; /* not needed by this launch */
    struct abar__slot *s = &L->slots[k];
    unsigned r = (unsigned)p->rank_of[w];
    abar_thread_t self;
    for (;;) {
        /* acquire (inside): a wave started after an abort does not run. */
        if (atomic_load_explicit(&L->abort_code, memory_order_acquire) == 0)
            run_cluster(s, r, &self);
        if (s->cluster + L->K >= L->clusters) return; /* the last wave */
        /* sbar's completion sets s->cluster and s->stop before its release. */
        (void)abar_arrive_and_wait(&s->sbar);
        if (s->stop) return;
    }
}

static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    struct abar__pool *p = wk->pool;
    abar_token_t t = wk->first;
    for (;;) {
        (void)abar_wait(&p->start, t);
        /* The next launch's start needs `done` to complete first, which needs
         * this worker's arrival below: this token is taken in time. */
        t = abar_current(&p->start);
        if (p->quit) return NULL;
        run_part(p, wk->index);
        (void)abar_arrive(&p->done);
    }
}

/* ---- the pool's life ------------------------------------------------------------ */

static void pool_free(struct abar__pool *p)
{
    if (p == NULL) return;
    free(p->workers);
    free(p->cpu);
    free(p->grp);
    free(p->slot_of);
    free(p->rank_of);
    free(p->slots);
    free(p->teams);
    free(p->shm);
    (void)abar_destroy(&p->start);
    (void)abar_destroy(&p->done);
    pthread_mutex_destroy(&p->launch.lock);
    free(p);
}

/* Starts the workers 1..n-1 of p; stops those started on failure. */
static int pool_stop(struct abar__pool *p, unsigned started)
{
    p->quit = true;
    (void)abar_arrive(&p->start); /* release: quit is seen after the wait */
    for (unsigned w = 1; w < started; w++) pthread_join(p->workers[w].tid, NULL);
    return 0;
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

static int pool_start(struct abar__pool **out)
{
    unsigned n = want_threads();
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
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_SET(0, &set);
    int ncpu = CPU_COUNT(&set);
    p->cpu = calloc((size_t)ncpu, sizeof *p->cpu);
    int *cpus = calloc((size_t)ncpu, sizeof *cpus);
    int *cgrp = calloc((size_t)ncpu, sizeof *cgrp);
    if (!p->workers || !p->grp || !p->slot_of || !p->rank_of || !p->slots || !p->teams ||
        !p->cpu || !cpus || !cgrp || pthread_mutex_init(&p->launch.lock, NULL) != 0) {
        free(cpus);
        free(cgrp);
        pool_free(p);
        return ENOMEM;
    }
    for (int c = 0, i = 0; c < CPU_SETSIZE && i < ncpu; c++)
        if (CPU_ISSET(c, &set)) cpus[i++] = c;
    p->ncpu = ncpu;
    (void)abar__team_topology("/sys/devices/system/cpu", cpus, ncpu, p->cpu, cgrp);
    for (unsigned w = 0; w < n; w++) p->grp[w] = cgrp[w % (unsigned)ncpu] + (int)(w / (unsigned)ncpu) * ncpu;
    free(cpus);
    free(cgrp);

    if (abar_init(&p->start, 1, NULL) || abar_init(&p->done, n, NULL)) {
        pool_free(p);
        return ENOMEM;
    }
    int err = 0;
    unsigned w;
    for (w = 1; w < n; w++) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        if (p->flags & ABAR_POOL_PIN) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(p->cpu[w % (unsigned)ncpu], &one);
            pthread_attr_setaffinity_np(&a, sizeof one, &one);
        }
        p->workers[w] = (struct worker){ .index = w, .pool = p, .first = abar_current(&p->start) };
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

/* Checks cfg against a pool of P threads; 0 or the error abar_run returns. */
static int check_launch(const abar_launch_t *cfg, abar_kernel_fn *kernel, unsigned P)
{
    if (cfg == NULL || kernel == NULL) return EINVAL;
    if (cfg->teams == 0 || cfg->team_size == 0 || cfg->cluster_size == 0) return EINVAL;
    if (cfg->teams % cfg->cluster_size != 0) return EINVAL;
    if ((uint64_t)cfg->team_size * cfg->cluster_size > P) return E2BIG;
    return 0;
}

/* Sets up the shared memory for K resident clusters. */
static int setup_shared(struct abar__pool *p, struct abar__launch *L)
{
    size_t b = L->cfg.shared_bytes;
    L->shared_stride = 0;
    if (b == 0) return 0;
    if (b > SIZE_MAX - ABAR_TEAM_SHARED_ALIGN) return ENOMEM;
    size_t stride = (b + ABAR_TEAM_SHARED_ALIGN - 1) / ABAR_TEAM_SHARED_ALIGN * ABAR_TEAM_SHARED_ALIGN;
    size_t nteams = (size_t)L->K * L->cfg.cluster_size;
    if (stride > SIZE_MAX / nteams) return ENOMEM;
    size_t need = stride * nteams;
    if (need > p->shm_bytes) {
        void *m = aligned_alloc(ABAR_TEAM_SHARED_ALIGN, need);
        if (m == NULL) return ENOMEM;
        free(p->shm);
        p->shm = m;
        p->shm_bytes = need;
    }
    L->shared_stride = stride;
    return 0;
}

int abar_run(const abar_launch_t *cfg, abar_kernel_fn *kernel, void *arg)
{
    if (abar__team_self) return EDEADLK; /* the pool is busy with our own launch */
    int err = check_launch(cfg, kernel, ABAR_POOL_THREADS_MAX);
    if (err) return err;
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&pool_lock);
    if (pool == NULL && (err = pool_start(&pool)) != 0) goto out;
    struct abar__pool *p = pool;
    if ((err = check_launch(cfg, kernel, p->nthreads)) != 0) goto out;

    struct abar__launch *L = &p->launch;
    L->cfg = *cfg;
    L->kernel = kernel;
    L->arg = arg;
    L->clusters = cfg->teams / cfg->cluster_size;
    L->C = cfg->team_size * cfg->cluster_size;
    if (p->place_C != L->C) {
        unsigned K = abar__team_place(p->nthreads, L->C,
                                      p->flags & ABAR_POOL_PIN ? p->grp : NULL,
                                      p->slot_of, p->rank_of);
        p->place_C = L->C;
        p->place_K = K;
    }
    L->K = p->place_K < L->clusters ? p->place_K : L->clusters;
    if ((err = setup_shared(p, L)) != 0) goto out;
    L->slots = p->slots;
    atomic_store_explicit(&L->abort_code, 0, memory_order_relaxed);
    for (unsigned k = 0; k < L->K; k++) {
        struct abar__slot *s = &p->slots[k];
        s->L = L;
        s->teams = &p->teams[(size_t)k * cfg->cluster_size];
        s->cluster = k;
        s->stop = false;
        for (unsigned i = 0; i < cfg->cluster_size; i++)
            s->teams[i].shared = p->shm + ((size_t)k * cfg->cluster_size + i) * L->shared_stride;
        abar_attr_t wave = { next_wave, s, 0 };
        (void)abar_destroy(&s->sbar);
        if (abar_init(&s->sbar, L->C, &wave) || abar__team_init_cluster(s)) {
            err = EINVAL; /* cannot happen: sizes were checked */
            goto out;
        }
    }
    p->L = L;
    /* release (in the arrival): everything above is seen by every worker
     * after its wait on `start`. */
    (void)abar_arrive(&p->start);
    run_part(p, 0);
    /* The done barrier's acquire makes every worker's work (and the abort
     * code) visible here; after it no worker touches the launch. */
    (void)abar_arrive_and_wait(&p->done);
    err = atomic_load_explicit(&L->abort_code, memory_order_relaxed);
out:
    pthread_mutex_unlock(&pool_lock);
    return err;
}
