/*
 * ring_internal.h - the private layout of a ring and the helpers of
 * ring.c (life cycle) and ring_steps.c (the four steps).
 *
 * Slot k has filled[k] (expects P) and ready[k] (expects C).  After n laps
 * both are in phase n.  A consumer at lap n needs filled[k] past phase n
 * (abar_phase >= n+1); a producer at lap n needs ready[k] past phase n-1
 * (abar_phase >= n): one phase ahead, so lap 0 passes at once.
 *
 * Invariant: a position at lap n always finds its barrier with at least
 * need-1 phases complete (it passed lap n-1, which needed exactly that), and
 * never more than need (phase `need` needs this position's own next arrival
 * on the other barrier).  So phase need-1 is complete or open, and a wait
 * names it with abar_token_at (see abar__ring_wait_phase).
 *
 * A position is one rank's place, and the ring keeps that place too: each
 * rank's step count (gives so far; step = phase * stages + index) lives in
 * the ring, in a line of its own (ring_step).  A give counts only when it
 * moves the rank's step from the position's step to the next (one CAS), so
 * whichever copy of a position gives first counts, and every other copy,
 * stale or of the same lap, is refused (EINVAL) and counts nothing.  Hence
 * ready[k] never completes without every consumer, nor filled[k] without
 * every producer.
 *
 * Only the layer's bookkeeping lives here; every hand-off is a core arrive
 * (release) and a core phase read or wait (acquire).
 */
#ifndef ABAR_RING_INTERNAL_H
#define ABAR_RING_INTERNAL_H

#include "abar_ring.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define RING_MAGIC_LIVE 0x72696e67u /* "ring" */
#define RING_MAGIC_DEAD 0x64656164u /* "dead" */
#define RING_FLAGS      (ABAR_WAIT_SPIN | ABAR_WAIT_PARK)
#define RING_SHARDS_MAX 64u
#define RING_SPIN_NS    50000u      /* default poll budget before parking (ABAR_SPIN_NS) */
#ifndef RING_CROWDED_NS
#define RING_CROWDED_NS 3000u       /* poll budget when P + C exceed the CPUs */
#endif
#ifndef RING_PURE_POLLS
#define RING_PURE_POLLS 128u        /* polls (about 2 us) before the poll starts yielding */
#endif

/* pos->_state */
#define POS_PRODUCER 0x1u
#define POS_CONSUMER 0x2u
#define POS_SIDE     0x3u
#define POS_HOLD     0x10u          /* acquired (producer) or waited (consumer) */

/* Busy count of the positions hashed to one shard: threads inside a slow
 * wait.  One line each, so a thread's enter/leave stays in its own cache. */
struct ring_busy {
    _Atomic uint32_t n;
    char pad[64 - sizeof(uint32_t)];
};

/* One rank's step count (see above): producers' ranks first, then the
 * consumers'.  One line each: only its rank's thread writes it. */
struct ring_step {
    _Atomic uint64_t n;
    char pad[64 - sizeof(uint64_t)];
};

struct ring_impl {
    /* line 0: read by every call; written at init, destroy and cancel only */
    _Atomic uint32_t magic;
    _Atomic uint32_t cancelled;
    uint32_t stages, producers, consumers;
    uint32_t flags;
    uint32_t nshards;
    uint32_t spin_ns;               /* poll budget; UINT32_MAX: never park (ABAR_WAIT_SPIN) */
    uint64_t ident;
    uint64_t check;                 /* ident ^ bars: a garbage struct is not "live" */
    abar_t *bars;                   /* filled[k] = bars[2k], ready[k] = bars[2k+1] */
    struct ring_busy *busy;         /* nshards lines, after the barriers; then
                                     * producers + consumers ring_step lines */
    /* line 1: written by the start calls only */
    _Atomic uint32_t issued[2];     /* positions handed out: producers, consumers */
};

_Static_assert(sizeof(struct ring_impl) <= sizeof(abar_ring_t), "abar_ring_t too small");

static inline struct ring_impl *rimpl(abar_ring_t *r) { return (struct ring_impl *)(void *)r; }

static inline uint64_t ring_check(uint64_t ident, const abar_t *bars)
{
    return ident ^ (uint64_t)(uintptr_t)bars ^ 0x5bd1e9955bd1e995u;
}

static inline void ring_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static inline struct ring_impl *live(abar_ring_t *r)
{
    if (r == NULL) return NULL;
    struct ring_impl *ri = rimpl(r);
    /* acquire: pairs with init's release store; the fields below are then
     * initialised (using a ring concurrently with its init or destroy is the
     * caller's race, beyond what EBUSY detects). */
    if (atomic_load_explicit(&ri->magic, memory_order_acquire) != RING_MAGIC_LIVE) return NULL;
    if (ri->check != ring_check(ri->ident, ri->bars)) return NULL;
    return ri;
}

static inline abar_t *filled(struct ring_impl *ri, uint32_t k) { return &ri->bars[2 * (size_t)k]; }
static inline abar_t *ready(struct ring_impl *ri, uint32_t k) { return &ri->bars[2 * (size_t)k + 1]; }

static inline uint64_t pos_step(const struct ring_impl *ri, const abar_ring_pos_t *pos)
{
    return pos->phase * ri->stages + pos->index;
}

/* The step count of the position's rank, or NULL if the position is not one
 * of this ring's, of this side, at its rank's current step (a stale copy). */
static inline _Atomic uint64_t *pos_ok(const struct ring_impl *ri, const abar_ring_pos_t *pos,
                                       uint32_t side)
{
    if (pos == NULL || pos->_ring != ri->ident || (pos->_state & POS_SIDE) != side ||
        pos->index >= ri->stages || pos->_shard >= ri->nshards ||
        pos->rank >= (side == POS_PRODUCER ? ri->producers : ri->consumers))
        return NULL;
    struct ring_step *steps = (struct ring_step *)(void *)(ri->busy + ri->nshards);
    _Atomic uint64_t *n = &steps[(side == POS_PRODUCER ? 0 : ri->producers) + pos->rank].n;
    /* relaxed: the rank's own count (its thread wrote it last); a copy used
     * in another thread is misuse, refused here or by give's CAS. */
    if (atomic_load_explicit(n, memory_order_relaxed) != pos_step(ri, pos)) return NULL;
    return n;
}

static inline bool cancelled(struct ring_impl *ri)
{
    /* relaxed: the flag only decides the error returned; the hand-off
     * ordering comes from the barriers, which abar_ring_cancel also cancels. */
    return atomic_load_explicit(&ri->cancelled, memory_order_relaxed) != 0;
}

static inline void advance(const struct ring_impl *ri, abar_ring_pos_t *pos)
{
    pos->_state &= ~POS_HOLD;
    if (++pos->index == ri->stages) {
        pos->index = 0;
        pos->phase++;
    }
}

enum { MODE_WAIT, MODE_TRY };

/* ring_steps.c: waits until abar_phase(b) >= need.  0, EBUSY (try),
 * ETIMEDOUT, ECANCELED. */
int abar__ring_wait_phase(struct ring_impl *ri, abar_t *b, uint64_t need, int mode,
                          const struct timespec *abstime, uint32_t shard);

#endif
