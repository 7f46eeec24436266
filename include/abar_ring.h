/*
 * abar_ring.h - producer/consumer rings on abar barriers (seed 002, SPEC §4).
 *
 * A ring of `stages` slots for P producer and C consumer threads.  Slot k is
 * guarded by two barriers: ready[k] (expects C arrivals: every consumer has
 * released the slot) and filled[k] (expects P arrivals: every producer has
 * written its part).  The ring keeps their phases itself, one progress word
 * a side, and parks waiters in core barriers.  The payload stays the caller's: the ring hands out slot
 * indices, as seed 002 indexes buffer_(i%2).  Every producer takes part in
 * every slot; every consumer sees every filled slot; a slot is refilled only
 * after every consumer released it.
 *
 * Each thread holds a position (abar_ring_pos_t: slot index and phase) that
 * the calls advance, named as in CUTLASS's pipelines:
 *
 *   producer:  abar_ring_producer_acquire  wait until slot pos.index may be filled
 *              ... fill buffer[pos.index] ...
 *              abar_ring_producer_commit   signal filled (no wait), advance
 *   consumer:  abar_ring_consumer_wait     wait until slot pos.index is filled
 *              ... read buffer[pos.index] ...
 *              abar_ring_consumer_release  signal ready (no wait), advance
 *
 * After n laps slot k's barriers are in phase n: a consumer at lap n waits
 * for filled[k]'s phase n to complete, a producer at lap n for ready[k]'s
 * phase n-1.  The producer thus starts one phase ahead: its first `stages`
 * acquires pass at once.
 *
 * Every call returns 0 or an errno value (pthread style).  Misuse (a commit
 * without an acquire, a release without a wait or twice, a position of
 * another ring or of the other side) is an error and changes nothing.  The
 * ring keeps each rank's step itself: of the copies of a position, the first
 * to commit or release counts and every other copy is refused (EINVAL).  (On
 * a side of one thread, whose give is a plain store, two copies given at the
 * same instant in two threads are not both caught: docs/ring.md.)
 */
#ifndef ABAR_RING_H
#define ABAR_RING_H

#include <abar.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ring.  A complete type so it can live anywhere in the process (static,
 * stack, heap); contents private.  Its barriers are allocated by
 * abar_ring_init and freed by abar_ring_destroy. */
typedef struct abar_ring {
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((aligned(64)))
#endif
    uint64_t _private[16];
} abar_ring_t;

/* One thread's place in the ring.  Obtained from abar_ring_producer_start or
 * abar_ring_consumer_start; owned by one thread; advanced by the calls. */
typedef struct abar_ring_pos {
    uint32_t index;   /* read-only: the slot this position works on */
    uint32_t rank;    /* read-only: 0..producers-1 or 0..consumers-1, per side */
    uint64_t phase;   /* read-only: laps completed around the ring */
    uint64_t _ring;   /* private: the ring's identity */
    uint32_t _state;  /* private: side and step */
    uint32_t _shard;  /* private */
} abar_ring_pos_t;

/* Largest stage count. */
#define ABAR_RING_STAGES_MAX (1u << 16)

/* Life cycle.  attr: NULL, or flags ABAR_WAIT_SPIN / ABAR_WAIT_PARK (the
 * barriers' wait policy); completion must be NULL and ABAR_PSHARED is not
 * supported (EINVAL). */
ABAR_API int abar_ring_init(abar_ring_t *ring, uint32_t stages, uint32_t producers,
                            uint32_t consumers, const abar_attr_t *attr);
ABAR_API int abar_ring_destroy(abar_ring_t *ring);

/* Positions: each hands out the next rank of its side; EAGAIN once all
 * `producers` (or `consumers`) positions are out. */
ABAR_API int abar_ring_producer_start(abar_ring_t *ring, abar_ring_pos_t *pos);
ABAR_API int abar_ring_consumer_start(abar_ring_t *ring, abar_ring_pos_t *pos);

/* Producer side. */
ABAR_API int abar_ring_producer_acquire(abar_ring_t *ring, abar_ring_pos_t *pos);
ABAR_API int abar_ring_producer_try_acquire(abar_ring_t *ring, abar_ring_pos_t *pos);
ABAR_API int abar_ring_producer_acquire_until(abar_ring_t *ring, abar_ring_pos_t *pos,
                                              const struct timespec *abstime);
ABAR_API int abar_ring_producer_commit(abar_ring_t *ring, abar_ring_pos_t *pos);

/* Consumer side. */
ABAR_API int abar_ring_consumer_wait(abar_ring_t *ring, abar_ring_pos_t *pos);
ABAR_API int abar_ring_consumer_try_wait(abar_ring_t *ring, abar_ring_pos_t *pos);
ABAR_API int abar_ring_consumer_wait_until(abar_ring_t *ring, abar_ring_pos_t *pos,
                                           const struct timespec *abstime);
ABAR_API int abar_ring_consumer_release(abar_ring_t *ring, abar_ring_pos_t *pos);

/* Control and inspection. */
ABAR_API int abar_ring_cancel(abar_ring_t *ring);
ABAR_API uint32_t abar_ring_stages(const abar_ring_t *ring);

#ifdef __cplusplus
}
#endif

#endif /* ABAR_RING_H */
