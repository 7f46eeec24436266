/*
 * abar_cuda/types.h - errors, limits and the types (barrier, token, completion barrier, cluster barrier, ring).
 *
 * Part of abar_cuda.h: include <abar_cuda.h>, not this file.
 */
#ifndef ABAR_CUDA_TYPES_H
#define ABAR_CUDA_TYPES_H

#ifndef ABAR_CUDA_H
#error "include <abar_cuda.h>, not <abar_cuda/types.h>"
#endif

/* Errors (errno values, as in abar.h). */
#define ABAR_CUDA_EINVAL    22
#define ABAR_CUDA_EBUSY     16
#define ABAR_CUDA_ETIMEDOUT 110

/* The largest expected arrival count: the hardware mbarrier limit. */
#define ABAR_CUDA_EXPECTED_MAX ((1u << 20) - 1)
/* The largest pending transaction count (bytes) of one phase. */
#define ABAR_CUDA_TX_MAX ((1u << 20) - 1)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#  define ABAR_CUDA__SM90 1
#else
#  define ABAR_CUDA__SM90 0
#endif

#define ABAR_CUDA__INL static __device__ __forceinline__
/* For functions a macro declares in the user's file: unused ones are fine. */
#define ABAR_CUDA__INL_DECL static __device__ __forceinline__ __attribute__((unused))

/* ------------------------------------------------------------------------ */
/* Types                                                                    */
/* ------------------------------------------------------------------------ */

/* A block-scope barrier.  Lives in shared memory (8-byte aligned). */
typedef struct abar_cuda_bar {
    unsigned long long mbar;        /* private: the hardware mbarrier */
#ifdef ABAR_CHECKED
    unsigned long long shadow;      /* private: phase:24 | arrived:20 | expected:20 */
    unsigned magic;                 /* private: set by init, names this launch and block */
    unsigned next_expected;         /* private: expected count after pending drops */
#endif
} abar_cuda_bar_t;

/* A token names one phase of one barrier; passed by value; fields private. */
typedef struct abar_cuda_token {
    unsigned long long raw;         /* private: mbarrier state, or phase (cbar, cluster bar) */
#ifdef ABAR_CHECKED
    const void *bar;                /* private: the barrier it belongs to */
    unsigned phase;                 /* private: shadow phase it arrived in */
#endif
} abar_cuda_token_t;

typedef void abar_cuda_completion_fn(void *arg);

/* A block-scope barrier with a completion function (seed 001): arrivals
 * (and drops) are counted by one acquire-release atomic add on `count`; the
 * arrival that brings them to the expected count held in `phase` runs the
 * completion and releases the phase on an mbarrier that expects that one
 * arrival (cbar.h). */
typedef struct abar_cuda_cbar {
    unsigned long long mbar;        /* private: the release, one arrival per phase */
    unsigned count;                 /* private: the open phase's drops << 20 | arrivals */
    unsigned phase;                 /* private: completed phases << 20 | expected (open phase) */
    unsigned pad_;
    abar_cuda_completion_fn *fn;    /* private */
    void *arg;                      /* private */
} abar_cuda_cbar_t;

/* A cluster-wide split barrier on mbarriers (sm_90): each block's threads
 * arrive on a local mbarrier with .noComplete; the
 * block's last arriver arrives remotely on every block's cluster mbarrier.
 * Phases alternate between two cluster mbarriers, so a fast block's
 * next-phase arrival can never be counted in a slow block's current phase. */
typedef struct abar_cuda_cluster_bar {
    unsigned long long local;       /* private: block threads + 1 */
    unsigned long long mbar[2];     /* private: phase k completes on mbar[k & 1] */
    unsigned phase;                 /* private: this block's next phase */
    unsigned blocks;                /* private: blocks in the cluster */
} abar_cuda_cluster_bar_t;

/* A producer/consumer ring: full[i] and empty[i] guard slot i.  The struct is
 * plain pointers: copy it into registers after it is initialized. */
typedef struct abar_cuda_ring {
    abar_cuda_bar_t *full;          /* stages barriers: slot filled */
    abar_cuda_bar_t *empty;         /* stages barriers: slot free */
    unsigned stages;
} abar_cuda_ring_t;

/* One side's position in the ring: slot index and the phase parity to wait
 * for.  Producers start one phase ahead, so their first pass does not wait. */
typedef struct abar_cuda_ring_state {
    unsigned index;
    unsigned phase;
} abar_cuda_ring_state_t;

#endif /* ABAR_CUDA_TYPES_H */
