/*
 * ring_steps.c - the four steps of a ring (producer acquire and commit,
 * consumer wait and release) and the wait under them: poll the phase, yield,
 * then park in the core barrier.  The protocol: ring_internal.h.
 */
#define _GNU_SOURCE
#include "ring_internal.h"

#include <errno.h>
#include <sched.h>

static bool bad_time(const struct timespec *t)
{
    return t == NULL || t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec > 999999999;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int abar__ring_wait_phase(struct ring_impl *ri, abar_t *b, uint64_t need, int mode,
                          const struct timespec *abstime, uint32_t shard)
{
    /* abar_phase reads the phase with acquire, pairing with the completer's
     * release: seeing phase >= need we see every write made before the
     * arrivals that completed phase need-1 (the slot's contents). */
    if (abar_phase(b) >= need) return 0;
    if (mode == MODE_TRY) return EBUSY;

    /* Count ourselves as waiting (destroy is EBUSY meanwhile).  seq_cst:
     * ordered with destroy's seq_cst reads of the shards. */
    struct ring_busy *busy = &ri->busy[shard];
    atomic_fetch_add(&busy->n, 1);
    int r = 0;
    /* Poll the phase: a hand-off that lands now costs one cache-line
     * transfer and no read-modify-write on the barrier's hot line.  Pure
     * polls first; then each poll yields the CPU once, so a thread we wait
     * for that shares our CPU gets to run; past the budget, park. */
    if (ri->spin_ns) {
        uint64_t t0 = 0, deadline = abstime ? (uint64_t)abstime->tv_sec * 1000000000u +
                                                  (uint64_t)abstime->tv_nsec
                                            : UINT64_MAX;
        for (uint32_t i = 1;; i++) {
            if (i <= RING_PURE_POLLS) ring_pause();
            else sched_yield();
            if (abar_phase(b) >= need) goto out;
            if (cancelled(ri)) { r = ECANCELED; goto out; }
            if (i % 16 == 0) {
                uint64_t now = now_ns();
                if (t0 == 0) t0 = now;
                if (now >= deadline) { r = ETIMEDOUT; goto out; }
                if (ri->spin_ns != UINT32_MAX && now - t0 >= ri->spin_ns) break;
            }
        }
    }
    /* Park in the core barrier, on phase need-1: it is the open phase or
     * a completed one (invariant above), so abar_token_at names it and the
     * wait returns once it completes (at once if it has), or on a cancel
     * of the barrier or the caller's deadline. */
    abar_token_t t = abar_token_at(b, need - 1);
    r = abstime ? abar_wait_until(b, t, abstime) : abar_wait(b, t);
out:
    /* release: our last access to the barrier precedes destroy's read of 0. */
    atomic_fetch_sub_explicit(&busy->n, 1, memory_order_release);
    return r;
}

/* ---- the four steps ------------------------------------------------------ */

/* producer_acquire and consumer_wait: wait until the slot may be taken, then
 * hold it.  A producer at lap n needs ready[k] past phase n-1 (it starts one
 * phase ahead, so its first lap passes at once); a consumer at lap n needs
 * filled[k] past phase n. */
static int take(abar_ring_t *ring, abar_ring_pos_t *pos, unsigned side, int mode,
                const struct timespec *abstime)
{
    struct ring_impl *ri = live(ring);
    if (ri == NULL || !pos_ok(ri, pos, side)) return EINVAL;
    if (pos->_state & POS_HOLD) return EPERM;             /* taken already: give it first */
    if (cancelled(ri)) return ECANCELED;
    const bool producer = side == POS_PRODUCER;
    abar_t *b = producer ? ready(ri, pos->index) : filled(ri, pos->index);
    int r = abar__ring_wait_phase(ri, b, pos->phase + !producer, mode, abstime, pos->_shard);
    if (r == 0) pos->_state |= POS_HOLD;
    return r;
}

/* producer_commit and consumer_release: signal the other side, no wait. */
static int give(abar_ring_t *ring, abar_ring_pos_t *pos, unsigned side)
{
    struct ring_impl *ri = live(ring);
    _Atomic uint64_t *n = ri ? pos_ok(ri, pos, side) : NULL;
    if (n == NULL) return EINVAL;
    if (!(pos->_state & POS_HOLD)) return EPERM;          /* not taken, or given twice */
    if (cancelled(ri)) return ECANCELED;
    abar_t *b = side == POS_PRODUCER ? filled(ri, pos->index) : ready(ri, pos->index);
    /* Claim the rank's step: of the copies of this position, one gives
     * (ring_internal.h).  relaxed: the claim orders nothing; the arrive does.
     * A held position at lap n then finds its barrier in phase n (it cannot
     * complete without this arrival). */
    uint64_t step = pos_step(ri, pos);
    if (!atomic_compare_exchange_strong_explicit(n, &step, step + 1, memory_order_relaxed,
                                                 memory_order_relaxed))
        return EINVAL;                                    /* another copy gave */
    /* The core arrive is a release: a producer's writes to the slot reach
     * every consumer whose wait sees filled's phase complete; a consumer's
     * reads happen before the producer that sees ready's phase overwrites it. */
    int r = abar_token_error(abar_arrive(b));
    if (r == 0) advance(ri, pos);
    else atomic_store_explicit(n, step, memory_order_relaxed);  /* nothing counted */
    return r;
}

int abar_ring_producer_acquire(abar_ring_t *ring, abar_ring_pos_t *pos)
{
    return take(ring, pos, POS_PRODUCER, MODE_WAIT, NULL);
}

int abar_ring_producer_try_acquire(abar_ring_t *ring, abar_ring_pos_t *pos)
{
    return take(ring, pos, POS_PRODUCER, MODE_TRY, NULL);
}

int abar_ring_producer_acquire_until(abar_ring_t *ring, abar_ring_pos_t *pos,
                                     const struct timespec *abstime)
{
    if (bad_time(abstime)) return EINVAL;
    return take(ring, pos, POS_PRODUCER, MODE_WAIT, abstime);
}

int abar_ring_producer_commit(abar_ring_t *ring, abar_ring_pos_t *pos)
{
    return give(ring, pos, POS_PRODUCER);
}

int abar_ring_consumer_wait(abar_ring_t *ring, abar_ring_pos_t *pos)
{
    return take(ring, pos, POS_CONSUMER, MODE_WAIT, NULL);
}

int abar_ring_consumer_try_wait(abar_ring_t *ring, abar_ring_pos_t *pos)
{
    return take(ring, pos, POS_CONSUMER, MODE_TRY, NULL);
}

int abar_ring_consumer_wait_until(abar_ring_t *ring, abar_ring_pos_t *pos,
                                  const struct timespec *abstime)
{
    if (bad_time(abstime)) return EINVAL;
    return take(ring, pos, POS_CONSUMER, MODE_WAIT, abstime);
}

int abar_ring_consumer_release(abar_ring_t *ring, abar_ring_pos_t *pos)
{
    return give(ring, pos, POS_CONSUMER);
}
