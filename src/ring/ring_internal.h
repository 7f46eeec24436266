/*
 * ring_internal.h - the private layout of a ring and the helpers of
 * ring.c (life cycle) and ring_steps.c (the four steps).
 *
 * Slot k has filled[k] (expects P arrivals) and ready[k] (expects C).  Step
 * s = lap * stages + k is slot k in lap `lap`.  The phases are kept per side
 * in one word, the side's progress:
 *
 *   done[FILL]  steps filled so far: filled[k] has completed lap n's phase
 *               once done[FILL] > n * stages + k
 *   done[FREE]  steps released so far, the same for ready[k]
 *
 * A single word can hold every slot's phase because phases complete in step
 * order: a rank gives its steps in order, and step s+1 completes only once
 * every rank of the side has given it, after giving s.  So the completer of
 * step s stores done = s + 1 (release) and the word never goes back.
 *
 * A consumer at step s needs done[FILL] > s; a producer at step s needs
 * done[FREE] > s - stages (it starts one lap ahead: the first `stages`
 * acquires pass at once).  Each rank keeps the last value it read of the
 * word it waits on (ring_rank.seen), so while the peer is ahead a take reads
 * nothing the peer writes.
 *
 * Giving.  Each rank's step count lives in its ring_rank line, which no
 * other thread reads: every call checks the position against it there, not
 * against the done word, whose line the other side polls (a load of that
 * line on the way to the store of done cost the hand-off as much as a
 * second cache-line transfer: docs/lab/where-time-goes.md).  A side of one
 * thread (P = 1 or C = 1): a give stores the next step in its rank line,
 * then in done with release - no read-modify-write.  A side of several
 * threads: a give claims the step with one CAS on its rank's count (so of
 * the copies of a position one counts and every other is refused, EINVAL),
 * then counts its arrival on the slot (arrivals, a fetch_add); the arrival
 * that completes the slot's phase stores done.
 *
 * Parking.  A waiter polls its done word, then parks in the side's bell, a
 * core barrier expecting 1 arrival: it reads the bell's phase, counts itself
 * in sleepers, re-reads done, and waits for that bell phase.  A giver that
 * stores done then reads sleepers and rings the bell (one arrival) only when
 * someone sleeps.  The store-then-read against the waiter's count-then-read
 * needs a full barrier on both sides; the giver's is free where the waiter
 * can issue a process-wide one (Linux membarrier, ring_heavy_barrier), else
 * it is a seq_cst fence.
 */
#ifndef ABAR_RING_INTERNAL_H
#define ABAR_RING_INTERNAL_H

#include "abar_ring.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define RING_MAGIC_LIVE 0x72696e67u /* "ring" */
#define RING_MAGIC_DEAD 0x64656164u /* "dead" */
#define RING_FLAGS      (ABAR_WAIT_SPIN | ABAR_WAIT_PARK)
#define RING_SHARDS_MAX 64u
#define RING_SPIN_NS    50000u      /* default poll budget before parking (ABAR_SPIN_NS) */
#ifndef RING_PURE_NS
#define RING_PURE_NS    8000u       /* polls that only pause, before they yield */
#endif
#ifndef RING_CROWDED_NS
#define RING_CROWDED_NS 3000u       /* poll budget when P + C exceed the CPUs */
#endif

/* pos->_state */
#define POS_PRODUCER 0x1u
#define POS_CONSUMER 0x2u
#define POS_SIDE     0x3u
#define POS_HOLD     0x10u          /* acquired (producer) or waited (consumer) */

enum { FILL = 0, FREE = 1 };        /* the sides' done words: producers give FILL */

/* Busy count of the positions hashed to one shard: threads inside a slow
 * wait.  One line each, so a thread's enter/leave stays in its own cache. */
struct ring_busy {
    _Atomic uint32_t n;
    char pad[64 - sizeof(uint32_t)];
};

/* One side's progress (see above) and its sleepers.  Written by the side's
 * completers (done) and by parking waiters of the other side (sleepers).
 * Two lines each (RING_APART), as the rank lines: x86 fetches lines in
 * pairs, so a neighbour one line away would still bounce with it.  The
 * sleeper count has its own: a giver reads it right after storing done,
 * and a read of the line the other side polls costs the hand-off time
 * (docs/lab/where-time-goes.md); its own line stays shared, unwritten while
 * no one parks. */
#define RING_APART 128
struct ring_done {
    _Atomic uint64_t done;
    char pad[RING_APART - sizeof(uint64_t)];
    _Atomic uint32_t sleepers;      /* waiters parked or parking on this word */
    char pad2[RING_APART - sizeof(uint32_t)];
};

/* One rank's lines: only its thread writes them. */
struct ring_rank {
    _Atomic uint64_t step;          /* steps given by this rank */
    _Atomic uint64_t seen;          /* last value read of the done word it waits on */
    char pad[RING_APART - 2 * sizeof(uint64_t)];
};

/* Arrivals on one slot's barrier, counted over all laps (sides of several
 * threads): the arrival that makes the count a multiple of the side's
 * threads completes the slot's phase. */
struct ring_arrivals {
    _Atomic uint64_t n;
    char pad[64 - sizeof(uint64_t)];
};

/* The heap block (one allocation, `bars` at its start):
 *   abar_t bell[2]                       parking: bell[FILL] for consumers,
 *                                        bell[FREE] for producers
 *   struct ring_done done[2]
 *   struct ring_rank rank[P + C]         producers' ranks first
 *   struct ring_arrivals arr[FILL][stages] if P > 1, then arr[FREE] if C > 1
 *   struct ring_busy busy[nshards]
 */
struct ring_impl {
    /* line 0: read by every call; written at init, destroy and cancel only */
    _Atomic uint32_t magic;
    _Atomic uint32_t cancelled;
    uint32_t stages, producers, consumers;
    uint32_t nshards;
    uint64_t ident;
    uint64_t check;                 /* ident ^ bars: a garbage struct is not "live" */
    abar_t *bars;                   /* the heap block: the two bells */
    struct ring_done *done;
    struct ring_rank *rank;
    /* line 1: read by gives of sides of several threads and by slow waits;
     * issued is written by the start calls only */
    struct ring_arrivals *arr[2];   /* NULL for a side of one thread */
    struct ring_busy *busy;
    uint32_t spin_ns;               /* poll budget; UINT32_MAX: never park (ABAR_WAIT_SPIN) */
    uint32_t flags;
    uint8_t crowded;                /* P + C exceed the CPUs: polls yield */
    uint8_t asym;                   /* waiters issue the process-wide barrier */
    _Atomic uint32_t issued[2];     /* positions handed out: producers, consumers */
};

_Static_assert(sizeof(struct ring_impl) <= sizeof(abar_ring_t), "abar_ring_t too small");
_Static_assert(offsetof(struct ring_impl, arr) == 64, "line 0 holds what every call reads");

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

static inline uint64_t pos_step(const struct ring_impl *ri, const abar_ring_pos_t *pos)
{
    return pos->phase * ri->stages + pos->index;
}

/* The side a position gives (FILL for producers) and its thread count. */
static inline int pos_gives(uint32_t side) { return side == POS_PRODUCER ? FILL : FREE; }

/* The word holding the step count of the position's rank (in the rank's
 * own line).  NULL if the position is not one of this ring's, of this side,
 * at its rank's current step (a stale copy). */
static inline _Atomic uint64_t *pos_ok(const struct ring_impl *ri, const abar_ring_pos_t *pos,
                                       uint32_t side)
{
    const uint32_t n = side == POS_PRODUCER ? ri->producers : ri->consumers;
    if (pos == NULL || pos->_ring != ri->ident || (pos->_state & POS_SIDE) != side ||
        pos->index >= ri->stages || pos->_shard >= ri->nshards || pos->rank >= n)
        return NULL;
    _Atomic uint64_t *w = &ri->rank[(side == POS_PRODUCER ? 0 : ri->producers) + pos->rank].step;
    /* relaxed: the rank's own count (its thread wrote it last); a copy used
     * in another thread is misuse, refused here or by give's CAS. */
    if (atomic_load_explicit(w, memory_order_relaxed) != pos_step(ri, pos)) return NULL;
    return w;
}

static inline bool cancelled(struct ring_impl *ri)
{
    /* relaxed: the flag only decides the error returned; a parked waiter is
     * woken by abar_ring_cancel cancelling the bells. */
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

/* ring_steps.c: waits until done[side] >= need, and stores the value read
 * in *seen.  0, EBUSY (try), ETIMEDOUT, ECANCELED. */
int abar__ring_wait_done(struct ring_impl *ri, int side, uint64_t need, int mode,
                         const struct timespec *abstime, uint32_t shard, uint64_t *seen);

/* ring.c: the waiter's half of the sleepers handshake (see above); false
 * if it could not be made (the waiter must not park then). */
bool abar__ring_heavy_barrier(struct ring_impl *ri);
/* ring.c: 1 where the process-wide barrier is available (registers it). */
int abar__ring_asym_available(void);

#endif
