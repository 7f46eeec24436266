/*
 * abar_team.h - teams and clusters: the CUDA launch model on CPU threads.
 *
 * abar_run() runs a kernel function on every thread of a grid of *teams*
 * (the thread block), grouped into *clusters* (the thread block cluster), on
 * a persistent pool of worker threads.  Every thread of a team and every team
 * of a cluster run at the same time; clusters beyond what the pool holds at
 * once run in waves.  Each team has its own shared memory, which the other
 * teams of its cluster can map (CUDA's map_shared_rank).
 *
 * Inside the kernel, the thread's place (`self`) gives its ranks, its team's
 * shared memory, and the team and cluster barriers.  The barriers follow seed
 * 004's collective rule, checked per thread: one arrive and one wait a phase;
 * a second arrive before the wait, or a wait without an arrive, is an error
 * code, never undefined behaviour.  Both are abar_t: a cluster barrier is
 * one over every thread of the cluster.
 *
 * Every call returns 0 or an errno value (pthread style), except the
 * inspectors, which return the value asked for.
 */
#ifndef ABAR_TEAM_H
#define ABAR_TEAM_H

#include <stddef.h>

#include "abar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The shape of a launch (CUDA's grid, block and cluster dimensions). */
typedef struct abar_launch {
    unsigned teams;         /* teams in the grid (> 0, a multiple of cluster_size) */
    unsigned team_size;     /* threads per team (> 0) */
    unsigned cluster_size;  /* teams per cluster (> 0, divides teams) */
    size_t   shared_bytes;  /* shared memory per team (0: none) */
} abar_launch_t;

/* The calling thread's place in a launch; valid only inside the kernel, and
 * only in the thread it was given to. */
typedef struct abar_thread abar_thread_t;

typedef void abar_kernel_fn(abar_thread_t *self, void *arg);

/* Alignment of abar_team_shared() (a cache line, and enough for any type). */
#define ABAR_TEAM_SHARED_ALIGN 64

/* ---- launching ------------------------------------------------------------ */

/* Runs kernel(self, arg) on every thread of the grid, returns when all have
 * returned.  Without a size given to abar_pool_configure, the pool first
 * grows to fit a cluster (team_size * cluster_size threads), more threads
 * than CPUs if need be: waits then yield and park instead of spinning.
 * 0, or: EINVAL (NULL cfg/kernel, a zero size, cluster_size not dividing
 * teams), E2BIG (a cluster needs more threads than the configured size, or
 * than ABAR_POOL_THREADS_MAX),
 * ENOMEM (shared memory), EAGAIN (the pool's threads could not be started),
 * EDEADLK (called from inside a kernel) -- in these cases nothing ran -- or
 * the code passed to abar_abort() by the kernel. */
ABAR_API int abar_run(const abar_launch_t *cfg, abar_kernel_fn *kernel, void *arg);

/* ---- the pool --------------------------------------------------------------- */

#define ABAR_POOL_PIN 0x1u /* pin each pool thread to one CPU, clusters on CPUs sharing a cache */

/* Sets the pool's size (threads that run at once, the caller of abar_run
 * included), a hard cap on a launch's cluster; 0: no cap, the pool starts at
 * ABAR_POOL_THREADS from the environment, else the number of CPUs, and grows
 * to the largest cluster a launch needs.  And its flags.  Takes effect at the next launch (the old pool's threads
 * are joined).  EINVAL (unknown flags, threads > ABAR_POOL_THREADS_MAX),
 * EDEADLK inside a kernel. */
#define ABAR_POOL_THREADS_MAX 4096u
ABAR_API int abar_pool_configure(unsigned threads, unsigned flags);

/* The pool's size now (before the first launch: its starting size); with a
 * configured size, the largest team_size * cluster_size abar_run accepts. */
ABAR_API unsigned abar_pool_threads(void);

/* Joins the pool's threads and frees its memory; the next launch starts a new
 * pool.  EDEADLK inside a kernel. */
ABAR_API int abar_pool_shutdown(void);

/* ---- inside a kernel: where am I ------------------------------------------- */

ABAR_API unsigned abar_thread_rank(const abar_thread_t *self);   /* in the team: 0..team_size-1 */
ABAR_API unsigned abar_team_size(const abar_thread_t *self);     /* threads per team */
ABAR_API unsigned abar_team_rank(const abar_thread_t *self);     /* in the grid: 0..teams-1 */
ABAR_API unsigned abar_team_count(const abar_thread_t *self);    /* teams in the grid */
ABAR_API unsigned abar_cluster_rank(const abar_thread_t *self);  /* team's rank in its cluster */
ABAR_API unsigned abar_cluster_size(const abar_thread_t *self);  /* teams per cluster */
ABAR_API unsigned abar_cluster_index(const abar_thread_t *self); /* the cluster's rank in the grid */
ABAR_API unsigned abar_cluster_count(const abar_thread_t *self); /* clusters in the grid */

/* ---- shared memory ----------------------------------------------------------- */

/* The team's shared memory: shared_bytes long, ABAR_TEAM_SHARED_ALIGN aligned,
 * contents unspecified when the team starts; NULL if shared_bytes is 0. */
ABAR_API void *abar_team_shared(const abar_thread_t *self);

/* The address in the shared memory of team `rank` of this cluster that
 * corresponds to `addr` in the caller's own (map_shared_rank).  NULL (errno
 * EINVAL) if addr is not within the caller's shared memory or rank is not
 * below cluster_size.  Valid until the whole cluster has returned. */
ABAR_API void *abar_cluster_map_shared(const abar_thread_t *self, const void *addr, unsigned rank);

/* ---- team barrier -------------------------------------------------------------- */

/* Split arrive/wait over the threads of the team.  Each thread arrives once
 * and waits once a phase: a second arrive before the wait counts nothing and
 * returns an invalid token (abar_token_error: EINVAL), a sync then returns
 * EALREADY; a wait without an arrive, or with another token than the arrive
 * returned, is EINVAL.  After abar_abort: ECANCELED. */
ABAR_API abar_token_t abar_team_arrive(abar_thread_t *self);
ABAR_API int abar_team_wait(abar_thread_t *self, abar_token_t t);
ABAR_API int abar_team_sync(abar_thread_t *self); /* arrive + wait */

/* ---- cluster barrier (over every thread of the cluster) ------------------- */

ABAR_API abar_token_t abar_cluster_arrive(abar_thread_t *self);
ABAR_API int abar_cluster_wait(abar_thread_t *self, abar_token_t t);
ABAR_API int abar_cluster_sync(abar_thread_t *self);

/* ---- failure ------------------------------------------------------------------- */

/* Aborts the launch: every barrier of the launch is cancelled (every wait
 * returns ECANCELED), no team starts any more, and abar_run returns `code`
 * (the first abort's, if several).  EINVAL if code is 0. */
ABAR_API int abar_abort(abar_thread_t *self, int code);

/* The code the launch was aborted with, or 0. */
ABAR_API int abar_aborted(const abar_thread_t *self);

#ifdef __cplusplus
}
#endif

#endif /* ABAR_TEAM_H */
