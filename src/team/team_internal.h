/*
 * team_internal.h - the private layout of a launch: pool, slots, teams.
 *
 * The pool has `nthreads` workers; worker 0 is the thread that calls
 * abar_run.  A launch cuts the workers into K *slots* of C = team_size *
 * cluster_size threads; slot k runs clusters k, k+K, k+2K, ... (the waves).
 * Each slot holds the barriers and shared memory of one resident cluster:
 *
 *   team.tbar   team barrier (team_size)
 *   slot.cbar   cluster barrier (C: every thread of the cluster; the core's
 *               arrival tree gathers them, so it costs what a flat barrier
 *               over the same threads costs)
 *   slot.sbar   between waves (C): its completion re-initialises the above
 *
 * A thread leaving the kernel drops out of tbar and cbar, so peers that
 * still synchronise never wait for it -- lazily: if nobody has used the group
 * yet, it only flags its exit, and the group's first user drops for it
 * (a store/load handshake on `used` and the exit flag, both seq_cst, so one
 * of the two sees the other; a CAS on the flag makes exactly one drop).
 * A barrier nobody used stays fresh and needs no initialisation next launch.
 */
#ifndef ABAR_TEAM_INTERNAL_H
#define ABAR_TEAM_INTERNAL_H

#include "abar_team.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct abar__slot;

/* One per thread of a slot, on its own cache line: whether the thread has
 * left the kernel without leaving a barrier group nobody had used yet.
 * Value: residency * 4 + EXITED (unclaimed) or + CLAIMED (its drop is done
 * or is being done, by itself or by the group's first user).  A residency
 * number is unique per resident cluster in the pool's life: the launch's
 * base + slot for the first wave, a fresh number for each later wave. */
struct abar__xflag {
    _Atomic uint64_t t;        /* the team barrier */
    _Atomic uint64_t c;        /* the cluster barrier */
    char pad[64 - 2 * sizeof(uint64_t)];
};
#define ABAR__X_EXITED  1u
#define ABAR__X_CLAIMED 2u

struct abar__team {
    abar_t tbar;
    /* read-mostly */
    _Alignas(64) struct abar__slot *slot;
    unsigned char *shared;     /* this team's shared memory */
    unsigned base;             /* slot rank of the team's thread 0 */
    _Atomic int used;          /* tbar has been used by this residency */
};

struct abar__slot {
    abar_t cbar;               /* the cluster barrier: one core barrier over its C threads */
    abar_t sbar;
    _Alignas(64) struct abar__launch *L;
    struct abar__team *teams;  /* cluster_size of them */
    struct abar__xflag *x;     /* C of them, by slot rank */
    unsigned cluster;          /* the resident cluster (written by the caller or sbar's completion) */
    bool stop;                 /* set by sbar's completion after an abort: no next wave */
    uint64_t epoch;            /* the pool's epoch its barriers were initialised for */
    uint64_t residency;        /* after the first wave: unique per resident cluster */
    _Atomic int used;          /* the cluster barrier has been used by this residency */
};

/* One launch: written by the caller before the start, read-only after. */
struct abar__launch {
    abar_launch_t cfg;
    abar_kernel_fn *kernel;
    void *arg;
    unsigned clusters;         /* teams / cluster_size */
    unsigned K;                /* resident clusters (slots) */
    unsigned C;                /* threads per cluster */
    size_t shared_stride;      /* bytes between two teams' shared memory */
    struct abar__slot *slots;
    _Atomic uint64_t *residencies; /* the pool's counter */
    uint64_t epoch;
    unsigned wait_flags;       /* attr.flags of every barrier: ABAR_WAIT_PARK when the pool is oversubscribed */
    unsigned yield_rounds;     /* oversubscribed: rounds a wait yields its CPU before it parks */
    _Atomic int abort_code;    /* first abar_abort's code, else 0 */
    pthread_mutex_t lock;      /* orders abort's cancels with sbar's re-inits */
};

struct abar_thread {
    struct abar__launch *L;
    struct abar__slot *slot;
    struct abar__team *team;
    struct abar__xflag *x;     /* this thread's exit flags */
    uint64_t key;              /* residency * 4: the exit flags' value base */
    unsigned thread_rank, team_rank, cluster_rank, cluster_index;
    bool team_pending, cluster_pending; /* arrived, not yet waited (seed 004's rule) */
    abar_token_t team_tok, cluster_tok;
};

/* Waits for phase t of one of the launch's barriers.  Oversubscribed, the
 * thread yields its CPU (testing the phase after each yield) for a few turns
 * of every thread sharing it, then parks (the barriers are ABAR_WAIT_PARK);
 * else the core's wait: spin for the budget, then park. */
static inline int abar__team_wait(const struct abar__launch *L, abar_t *b, abar_token_t t)
{
    for (unsigned i = 0; i < L->yield_rounds; i++) {
        int r = abar_test(b, t);
        if (r != EBUSY) return r;
        sched_yield();
    }
    return abar_wait(b, t);
}

/* Arrives on one of the launch's barriers and waits for the phase: the
 * core's arrive_and_wait (its fast paths for a few threads), unless the
 * launch is oversubscribed and its waits yield first. */
static inline int abar__team_sync(const struct abar__launch *L, abar_t *b)
{
    if (L->yield_rounds == 0) return abar_arrive_and_wait(b);
    abar_token_t t = abar_arrive(b);
    int e = abar_token_error(t);
    return e ? e : abar__team_wait(L, b, t);
}

/* The pool (team_pool.c).  Written under its lock (one launch at a time)
 * except where said. */
struct worker {
    pthread_t tid;
    unsigned index;
    struct abar__pool *pool;
};

struct abar__pool {
    /* line 0: the caller writes it once a launch, the workers read it */
    _Alignas(64) _Atomic uint32_t gen; /* launch generation; futex word of sleeping workers */
    _Atomic uint32_t sleepers;         /* workers that may sleep on gen */
    bool quit;                         /* read after gen moves: leave the loop */
    uint64_t base;                     /* read after gen moves: the first wave's residency base */
    /* every worker arrives once a launch; the caller waits for the phase */
    abar_t done;
    /* read-mostly */
    _Alignas(64) unsigned nthreads;    /* P, the caller included */
    unsigned flags;
    uint64_t spin_ns;                  /* 0 when the pool has more threads than CPUs */
    unsigned wait_flags;               /* the launch barriers' flags: ABAR_WAIT_PARK when oversubscribed */
    unsigned yield_rounds;             /* oversubscribed: a wait's yields before it parks */
    struct abar__launch *L;            /* the current launch (read after gen moves) */
    void (*part)(struct abar__pool *, unsigned, uint64_t); /* each worker's part of it (likewise) */
    struct worker *workers;
    int *cpu;                          /* worker w runs on cpu[w % ncpu] when pinned */
    int *grp;                          /* cache group of worker w */
    int ncpu;
    /* Cached per launch shape: the cut of workers into slots. */
    unsigned place_C, place_K;
    int *slot_of, *rank_of;
    /* The barriers stay initialised between launches of one shape. */
    unsigned shape_ts, shape_cs;
    uint64_t epoch;
    _Atomic uint64_t residencies;
    /* Grow-only storage for the slots, teams, exit flags and shared memory. */
    struct abar__launch launch;
    struct abar__slot *slots;          /* P of them */
    struct abar__team *teams;          /* P of them */
    struct abar__xflag *xflags;        /* P of them */
    unsigned char *shm;
    size_t shm_bytes;
};

/* Locks the pool for one launch and fits it to a cluster of `need` threads:
 * without a configured size, a smaller pool is replaced by one of `need`.
 * 0 (locked; *out the pool) or ENOMEM, EAGAIN (unlocked). */
int abar__pool_enter(unsigned need, struct abar__pool **out);
void abar__pool_leave(void);
/* Runs part(p, w, base) on every worker w of the pool, the caller as worker
 * 0, for launch p->L (base: its first wave's residency base); returns when
 * all are done (acquire: their parts happen before). */
typedef void abar__pool_part_fn(struct abar__pool *p, unsigned w, uint64_t base);
void abar__pool_dispatch(struct abar__pool *p, abar__pool_part_fn *part);

/* team_sync.c */
extern _Thread_local abar_thread_t *abar__team_self; /* inside a kernel: its self */
void abar__team_exit(abar_thread_t *self);           /* leave the kernel: drop out of the barriers */
/* Sets a slot up for its next resident cluster: initialises every barrier
 * if the slot's epoch is not the launch's, else only those the previous
 * residency used (or all, after an abort).  0 or EINVAL. */
int abar__team_prepare_cluster(struct abar__slot *s);
void abar__team_next_wave(void *slot);               /* sbar's completion (team_pool.c) */

/* team_topo.c: the CPU order for pinning and its cache groups.
 * Fills order[0..n) with the allowed CPUs sorted so that CPUs sharing the
 * last-level cache (then the L2) are adjacent, and group[i] with the
 * last-level cache group of order[i] (0, 1, ...).  Reads
 * <root>/cpuN/cache/indexI/{level,shared_cpu_list}; if that cannot be read,
 * keeps cpus' order in one group and returns ENOENT (else 0). */
int abar__team_topology(const char *root, const int *cpus, int n, int *order, int *group);
/* Parses a sysfs cpu list ("0-3,8,10-11") into a bitmap of `bits` bits;
 * returns the number of CPUs set, -1 if malformed. */
int abar__team_cpulist(const char *s, unsigned char *bitmap, int bits);
/* Cuts workers 0..P-1 (worker w on group grp[w]) into slots of C: whole
 * slots inside a group first, then the leftovers in worker order.  Writes
 * slot_of[w] (or -1) and rank_of[w]; returns the number of slots. */
unsigned abar__team_place(unsigned P, unsigned C, const int *grp, int *slot_of, int *rank_of);

#endif
