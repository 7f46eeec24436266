/*
 * ring_steps.c - the four steps of a ring (producer acquire and commit,
 * consumer wait and release) and the wait under them: poll the side's done
 * word, then park in its bell.  The protocol: ring_internal.h.
 */
#define _GNU_SOURCE
#include "ring_internal.h"

#include <errno.h>
#include <sched.h>

static bool bad_time(const struct timespec *t)
{
    return t == NULL || t->tv_nsec < 0 || t->tv_nsec > 999999999;
}

/* An absolute CLOCK_MONOTONIC deadline in ns, as the core reads one: a time
 * before the epoch is past (0), one beyond 2^64 - 1 ns never comes. */
static uint64_t deadline_of(const struct timespec *t)
{
    if (t->tv_sec < 0) return 0;
    if ((uint64_t)t->tv_sec > (UINT64_MAX - 999999999u) / 1000000000u) return UINT64_MAX;
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The giver's half of the sleepers handshake (ring_internal.h): after its
 * store of done, ring the side's bell if a waiter of the other side sleeps. */
static inline void ring_wake(struct ring_impl *ri, int side)
{
    if (ri->asym) atomic_signal_fence(memory_order_seq_cst);  /* the waiter's membarrier orders us */
    else atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&ri->done[side].sleepers, memory_order_relaxed) == 0) return;
    /* One arrival completes the bell's open phase and wakes its waiters.
     * EINVAL: another giver's arrival is completing it; arrive again, so a
     * phase completes after the sleeper counted itself.  (A bell destroyed
     * under us, a give racing abar_ring_destroy, is the caller's race: stop
     * once the ring is no longer live.) */
    for (unsigned i = 0; abar_token_error(abar_arrive(&ri->bars[side])) == EINVAL; i++) {
        if (atomic_load_explicit(&ri->magic, memory_order_relaxed) != RING_MAGIC_LIVE) break;
        if (i < 64) ring_pause();
        else sched_yield();
    }
}

int abar__ring_wait_done(struct ring_impl *ri, int side, uint64_t need, int mode,
                         const struct timespec *abstime, uint32_t shard, uint64_t *seen)
{
    struct ring_done *dw = &ri->done[side];
    /* acquire: pairs with the completer's release store of done: seeing
     * done >= need we see every write made before the gives that completed
     * step need-1 (the slot's contents, or the consumers' last reads). */
    uint64_t d = atomic_load_explicit(&dw->done, memory_order_acquire);
    if (d >= need) goto done;
    if (mode == MODE_TRY) return EBUSY;

    /* Count ourselves as waiting (destroy is EBUSY meanwhile).  seq_cst:
     * ordered with destroy's seq_cst reads of the shards. */
    struct ring_busy *busy = &ri->busy[shard];
    atomic_fetch_add(&busy->n, 1);
    int r = 0;
    uint64_t deadline = abstime ? deadline_of(abstime) : UINT64_MAX;
    /* Poll done: a give that lands now costs one cache-line transfer and
     * nothing else on either side.  Where every ring thread can have a CPU
     * the poll only pauses for RING_PURE_NS (no system call while the giver
     * runs: a running giver gives within that); past it, or from the start
     * where the ring is crowded, each poll yields the CPU, so a thread we
     * wait for that shares it gets to run.  Past the budget, park
     * (ABAR_WAIT_SPIN: poll on). */
    if (ri->spin_ns) {
        uint64_t t0 = 0;
        bool yield = ri->crowded;
        for (uint32_t i = 1;; i++) {
            if (yield) sched_yield();
            else ring_pause();
            d = atomic_load_explicit(&dw->done, memory_order_acquire);
            if (d >= need) goto out;
            if (cancelled(ri)) { r = ECANCELED; goto out; }
            if (yield || i % 32 == 0) {
                uint64_t now = now_ns();
                if (t0 == 0) t0 = now;
                if (now >= deadline) { r = ETIMEDOUT; goto out; }
                if (now - t0 >= RING_PURE_NS) yield = true;
                if (ri->spin_ns != UINT32_MAX && now - t0 >= ri->spin_ns) break;
            }
        }
    }
    /* Park in the side's bell: read its phase, count ourselves a sleeper,
     * re-read done.  A giver that stored done before our count is seen by
     * the re-read; one that stores after it sees our count and rings, which
     * completes the bell phase read before (or a later one): the wait on
     * that phase returns at once or when it rings.  A wake for another
     * waiter's step only sends us round again. */
    for (;;) {
        abar_t *bell = &ri->bars[side];
        uint64_t bp = abar_phase(bell);
        atomic_fetch_add(&dw->sleepers, 1);                /* seq_cst */
        bool can_park = abar__ring_heavy_barrier(ri);
        d = atomic_load_explicit(&dw->done, memory_order_acquire);
        if (d >= need || cancelled(ri) || !can_park) {
            atomic_fetch_sub(&dw->sleepers, 1);
            if (d >= need) break;
            if (cancelled(ri)) { r = ECANCELED; break; }
            if (now_ns() >= deadline) { r = ETIMEDOUT; break; }
            sched_yield();                                 /* no barrier: poll, never park */
            continue;
        }
        abar_token_t t = abar_token_at(bell, bp);
        int w = abstime ? abar_wait_until(bell, t, abstime) : abar_wait(bell, t);
        atomic_fetch_sub(&dw->sleepers, 1);
        d = atomic_load_explicit(&dw->done, memory_order_acquire);
        if (d >= need) break;
        if (w == ECANCELED || cancelled(ri)) { r = ECANCELED; break; }
        if (w == ETIMEDOUT) { r = ETIMEDOUT; break; }
    }
out:
    /* release: our last access to the ring precedes destroy's read of 0. */
    atomic_fetch_sub_explicit(&busy->n, 1, memory_order_release);
    if (r) return r;
done:
    *seen = d;
    return 0;
}

/* ---- the four steps ------------------------------------------------------ */

/* producer_acquire and consumer_wait: wait until the slot may be taken, then
 * hold it.  A consumer at step s needs done[FILL] > s; a producer at step s
 * needs done[FREE] > s - stages (it starts one lap ahead).  The rank's last
 * read of that word (ring_rank.seen) answers without a read of the peer's
 * line while the peer is ahead. */
static int take(abar_ring_t *ring, abar_ring_pos_t *pos, unsigned side, int mode,
                const struct timespec *abstime)
{
    struct ring_impl *ri = live(ring);
    if (ri == NULL || !pos_ok(ri, pos, side)) return EINVAL;
    if (pos->_state & POS_HOLD) return EPERM;             /* taken already: give it first */
    if (cancelled(ri)) return ECANCELED;
    const bool producer = side == POS_PRODUCER;
    const uint64_t s = pos_step(ri, pos);
    const uint64_t need = producer ? (s + 1 > ri->stages ? s + 1 - ri->stages : 0) : s + 1;
    struct ring_rank *rk = &ri->rank[(producer ? 0 : ri->producers) + pos->rank];
    /* relaxed: the rank's own cache (its thread wrote it); the acquire that
     * read the value ordered the peer's writes before us then. */
    uint64_t seen = atomic_load_explicit(&rk->seen, memory_order_relaxed);
    if (seen < need) {
        int r = abar__ring_wait_done(ri, producer ? FREE : FILL, need, mode, abstime,
                                     pos->_shard, &seen);
        if (r) return r;
        atomic_store_explicit(&rk->seen, seen, memory_order_relaxed);
    }
    pos->_state |= POS_HOLD;
    return 0;
}

/* producer_commit and consumer_release: signal the other side, no wait. */
static int give(abar_ring_t *ring, abar_ring_pos_t *pos, unsigned side)
{
    struct ring_impl *ri = live(ring);
    _Atomic uint64_t *w = ri ? pos_ok(ri, pos, side) : NULL;
    if (w == NULL) return EINVAL;
    if (!(pos->_state & POS_HOLD)) return EPERM;          /* not taken, or given twice */
    if (cancelled(ri)) return ECANCELED;
    const int g = pos_gives(side);
    const uint32_t n = side == POS_PRODUCER ? ri->producers : ri->consumers;
    uint64_t step = pos_step(ri, pos);
    if (n == 1) {
        /* One thread on this side: its rank's count (pos_ok checked it)
         * equals the side's done word.  relaxed: the rank's own count.
         * release: a producer's writes to the slot reach every consumer
         * that reads done past this step; a consumer's reads of it happen
         * before the producer that does overwrites it. */
        atomic_store_explicit(w, step + 1, memory_order_relaxed);
        atomic_store_explicit(&ri->done[g].done, step + 1, memory_order_release);
    } else {
        /* Claim the rank's step: of the copies of this position, one gives
         * (ring_internal.h).  relaxed: the claim orders nothing; the
         * arrival does. */
        if (!atomic_compare_exchange_strong_explicit(w, &step, step + 1, memory_order_relaxed,
                                                     memory_order_relaxed))
            return EINVAL;                                /* another copy gave */
        /* acq_rel: the arrival that completes the slot's phase has seen
         * (through the release sequence) every other rank's writes, and
         * passes them on with its release store of done. */
        uint64_t old = atomic_fetch_add_explicit(&ri->arr[g][pos->index].n, 1,
                                                 memory_order_acq_rel);
        if ((old + 1) % n != 0) {
            advance(ri, pos);
            return 0;
        }
        atomic_store_explicit(&ri->done[g].done, step + 1, memory_order_release);
    }
    ring_wake(ri, g);
    advance(ri, pos);
    return 0;
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
