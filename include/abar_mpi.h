/*
 * abar_mpi.h - asynchronous barriers over MPI: the split arrive/wait of
 * abar.h across the processes (ranks) of an MPI communicator, and, in
 * hierarchical mode, across every thread of every rank.
 *
 *   abar_token_t t = abar_mpi_arrive(&bar);   // posts this rank's arrival
 *   compute_interior();                       // hides the barrier latency
 *   abar_mpi_wait(&bar, t);                   // every rank has arrived
 *
 * Arrive never blocks.  Test and wait drive MPI progress themselves; an
 * optional progress thread makes the barrier's MPI calls while the caller
 * computes (then wait only blocks).  With a
 * completion function, it runs once per phase on the root rank after every
 * rank (every thread) has arrived and before any is released, and the root's
 * result buffer is delivered to every rank's result buffer before its release.
 *
 * Tokens are the abar_token_t of abar.h with the same rules (a completed
 * phase, however old: 0 at once; another barrier's token: EINVAL).
 * Init and destroy are collective over the communicator, like the
 * MPI_Comm_dup and MPI_Comm_free they call.  Link -labar_mpi -labar and MPI.
 * Reference: docs/mpi.md.
 */
#ifndef ABAR_MPI_H
#define ABAR_MPI_H

#include <abar.h>
#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* attr.flags (with ABAR_WAIT_SPIN or ABAR_WAIT_PARK for blocked threads) */
#define ABAR_MPI_PROGRESS_THREAD 0x100u /* a thread drives MPI progress between arrive and
                                           wait (needs MPI_THREAD_MULTIPLE) */
#define ABAR_MPI_IBARRIER        0x200u /* arrivals through MPI_Ibarrier instead of the
                                           built-in dissemination (no completion only) */
#define ABAR_MPI_P2P             0x400u /* messages even when every rank shares a node
                                           (default there: a shared-memory counter) */

/* The barrier: caller-owned, contents private. */
typedef struct abar_mpi {
    void *_private;
} abar_mpi_t;

typedef struct abar_mpi_attr {
    abar_completion_fn *completion; /* run once per phase on `root`; NULL: none    */
    void *arg;                      /* passed to completion (on the root)           */
    int root;                       /* rank that runs the completion (same on all)  */
    void *result;                   /* this rank's copy of the phase result         */
    size_t result_size;             /* bytes, same on all ranks; 0: no result       */
    unsigned threads;               /* participants in this rank: 0 or 1 flat,
                                       >1 hierarchical (may differ between ranks)   */
    unsigned flags;                 /* ABAR_MPI_*, ABAR_WAIT_SPIN or ABAR_WAIT_PARK  */
    unsigned progress_us;           /* progress thread: pause between polls (0: spin) */
} abar_mpi_attr_t;

/* Life cycle (collective over comm). */
ABAR_API int abar_mpi_init(abar_mpi_t *b, MPI_Comm comm, const abar_mpi_attr_t *attr);
ABAR_API int abar_mpi_destroy(abar_mpi_t *b);

/* One arrival of this rank (of this thread, hierarchical); never blocks. */
ABAR_API abar_token_t abar_mpi_arrive(abar_mpi_t *b);

/* Waiting: 0, EINVAL, ECANCELED, EIO (an MPI call failed), EDEADLK (wait from
 * the completion); wait_until also ETIMEDOUT (CLOCK_MONOTONIC); test EBUSY. */
ABAR_API int abar_mpi_test(abar_mpi_t *b, abar_token_t t);
ABAR_API int abar_mpi_wait(abar_mpi_t *b, abar_token_t t);
ABAR_API int abar_mpi_wait_until(abar_mpi_t *b, abar_token_t t,
                                 const struct timespec *abstime);
ABAR_API int abar_mpi_arrive_and_wait(abar_mpi_t *b);

/* Control and inspection (local to this rank). */
ABAR_API int abar_mpi_cancel(abar_mpi_t *b);
ABAR_API uint64_t abar_mpi_phase(const abar_mpi_t *b);

#ifdef __cplusplus
}
#endif

#endif /* ABAR_MPI_H */
