/*
 * abar.h - asynchronous barriers for C: the host layer.
 *
 * A barrier with an expected arrival count and a phase.  abar_arrive() counts
 * one arrival and returns at once with a token naming the phase it arrived in;
 * abar_wait() blocks while that phase is current.  The last arrival of a phase
 * runs the optional completion function, resets the count and advances the
 * phase, and only then releases the waiters.  Memory written before an arrive
 * is visible after the matching wait and inside the completion function; what
 * the completion function writes is visible to every released waiter.
 *
 * Every call returns 0 or an errno value (pthread style).  Where the CUDA
 * programming guide leaves behaviour undefined, abar defines it: see
 * abar_init(3) and docs/reference.md for the table.
 */
#ifndef ABAR_H
#define ABAR_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the library exports (a build that embeds the core, such as the
 * pthread interposer, defines ABAR_API empty to export none of it). */
#ifndef ABAR_API
#  if defined(__GNUC__) || defined(__clang__)
#    define ABAR_API __attribute__((visibility("default")))
#  else
#    define ABAR_API
#  endif
#endif

/* The largest expected arrival count (also the hardware mbarrier limit). */
#define ABAR_EXPECTED_MAX ((1u << 20) - 1)

/* attr.flags */
#define ABAR_PSHARED   0x1u  /* usable across processes mapping the same memory */
#define ABAR_WAIT_SPIN 0x2u  /* waiters never park in the kernel */
#define ABAR_WAIT_PARK 0x4u  /* waiters park at once (no spinning) */

/* The barrier.  A complete type so it can live anywhere (static, stack, heap,
 * a shared mapping); its contents are private: use the functions. */
/* In C++ the tag is abar_barrier_: `struct abar` would clash with namespace
 * abar (abar.hpp).  Same layout; every function takes abar_t. */
#ifdef __cplusplus
typedef struct abar_barrier_ {
#else
typedef struct abar {
#endif
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((aligned(64)))
#endif
    uint64_t _private[32];
} abar_t;

/* A token names one phase of one barrier.  Passed by value; fields private. */
typedef struct abar_token {
    uint64_t raw;   /* private: the phase (or, in an invalid token, the error) */
    uint64_t id;    /* private: the barrier's identity (0 in an invalid token) */
} abar_token_t;

typedef void abar_completion_fn(void *arg);

typedef struct abar_attr {
    abar_completion_fn *completion;  /* run once per phase by the last arriver; NULL: none */
    void *arg;                       /* passed to completion */
    unsigned flags;                  /* ABAR_PSHARED | ABAR_WAIT_SPIN or ABAR_WAIT_PARK */
} abar_attr_t;

/* Life cycle. */
ABAR_API int abar_init(abar_t *b, uint32_t expected, const abar_attr_t *attr);
ABAR_API int abar_destroy(abar_t *b);

/* Arrival: never blocks. */
ABAR_API abar_token_t abar_arrive(abar_t *b);
ABAR_API abar_token_t abar_arrive_n(abar_t *b, uint32_t n);
ABAR_API abar_token_t abar_current(abar_t *b);
ABAR_API abar_token_t abar_token_at(abar_t *b, uint64_t phase);
ABAR_API int abar_arrive_and_drop(abar_t *b);

/* Waiting. */
ABAR_API int abar_wait(abar_t *b, abar_token_t t);
ABAR_API int abar_wait_until(abar_t *b, abar_token_t t, const struct timespec *abstime);
ABAR_API int abar_test(abar_t *b, abar_token_t t);
ABAR_API int abar_arrive_and_wait(abar_t *b);

/* Control and inspection. */
ABAR_API int abar_cancel(abar_t *b);
ABAR_API uint64_t abar_phase(const abar_t *b);

/* The CPUs this process may use: its affinity mask, capped by its cgroup's
 * CPU quota (rounded up), at least 1.  What abar counts to decide whether a
 * barrier is oversubscribed; read once, when the library is loaded. */
ABAR_API unsigned abar_ncpu(void);

/* 0 if t is a valid token (it may still name a phase that is not complete),
 * else the error abar_wait would return for it at once (EINVAL, ECANCELED). */
ABAR_API int abar_token_error(abar_token_t t);

#ifdef __cplusplus
}
#endif

#endif /* ABAR_H */
