/*
 * ring.c - producer/consumer rings on core barriers (seed 002, SPEC §4).
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
 * names it with abar_token_at (see wait_phase).
 *
 * Only the layer's bookkeeping lives here; every hand-off is a core arrive
 * (release) and a core phase read or wait (acquire).
 */
#define _GNU_SOURCE
#include "abar_ring.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>

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
    struct ring_busy *busy;         /* nshards lines, after the barriers */
    /* line 1: written by the start calls only */
    _Atomic uint32_t issued[2];     /* positions handed out: producers, consumers */
};

_Static_assert(sizeof(struct ring_impl) <= sizeof(abar_ring_t), "abar_ring_t too small");

static inline struct ring_impl *rimpl(abar_ring_t *r) { return (struct ring_impl *)(void *)r; }

static uint64_t ring_check(uint64_t ident, const abar_t *bars)
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

static inline bool pos_ok(const struct ring_impl *ri, const abar_ring_pos_t *pos, uint32_t side)
{
    return pos != NULL && pos->_ring == ri->ident && (pos->_state & POS_SIDE) == side &&
           pos->index < ri->stages && pos->_shard < ri->nshards;
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

/* The poll budget: ABAR_SPIN_NS as for the core, else RING_SPIN_NS. */
static uint32_t spin_budget(void)
{
    const char *e = getenv("ABAR_SPIN_NS");
    if (e && *e) {
        char *end;
        unsigned long long x = strtoull(e, &end, 10);
        if (*end == '\0') return x < UINT32_MAX ? (uint32_t)x : UINT32_MAX - 1;
    }
    return RING_SPIN_NS;
}

enum { MODE_WAIT, MODE_TRY };

/* Waits until abar_phase(b) >= need.  0, EBUSY (try), ETIMEDOUT, ECANCELED. */
static int wait_phase(struct ring_impl *ri, abar_t *b, uint64_t need, int mode,
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

/* ---- life cycle ------------------------------------------------------------ */

int abar_ring_init(abar_ring_t *ring, uint32_t stages, uint32_t producers,
                   uint32_t consumers, const abar_attr_t *attr)
{
    if (ring == NULL || stages == 0 || stages > ABAR_RING_STAGES_MAX ||
        producers == 0 || producers > ABAR_EXPECTED_MAX ||
        consumers == 0 || consumers > ABAR_EXPECTED_MAX)
        return EINVAL;
    unsigned flags = attr ? attr->flags : 0;
    if (attr && attr->completion) return EINVAL;
    if (flags & ~RING_FLAGS) return EINVAL;               /* ABAR_PSHARED, unknown bits */
    if ((flags & ABAR_WAIT_SPIN) && (flags & ABAR_WAIT_PARK)) return EINVAL;
    if (live(ring)) return EBUSY;                         /* destroy it first */

    uint32_t nshards = producers + consumers < RING_SHARDS_MAX ? producers + consumers
                                                                : RING_SHARDS_MAX;
    size_t nb = 2 * (size_t)stages * sizeof(abar_t);
    abar_t *bars = aligned_alloc(64, nb + nshards * sizeof(struct ring_busy));
    if (bars == NULL) return ENOMEM;
    /* The ring polls itself and its barriers park at once (the core's own
     * adaptive spin counts the waiters of one barrier only, and a ring
     * spreads its waiters over 2*stages barriers).  ABAR_WAIT_SPIN: poll,
     * never park.  ABAR_WAIT_PARK: park at once.  More ring threads than
     * CPUs: poll only briefly (RING_CROWDED_NS), since a long poll holds the
     * CPU that the awaited thread needs, but a hand-off is often imminent. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    bool crowded = (long)producers + consumers > (ncpu > 0 ? ncpu : 1);
    abar_attr_t a = { NULL, NULL, flags & ABAR_WAIT_SPIN ? ABAR_WAIT_SPIN : ABAR_WAIT_PARK };
    for (uint32_t k = 0; k < stages; k++) {
        if (abar_init(&bars[2 * (size_t)k], producers, &a) ||
            abar_init(&bars[2 * (size_t)k + 1], consumers, &a)) {
            free(bars);  /* cannot happen: the arguments were checked above */
            return EINVAL;
        }
    }
    struct ring_busy *busy = (struct ring_busy *)(void *)((char *)bars + nb);
    for (uint32_t i = 0; i < nshards; i++) atomic_init(&busy[i].n, 0);

    static _Atomic uint64_t counter;
    /* relaxed: only uniqueness matters */
    uint64_t id = atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed) + 1;
    id = id * 0x9e3779b97f4a7c15u ^ (uint64_t)(uintptr_t)ring ^ (uint64_t)getpid() << 32;

    struct ring_impl *ri = rimpl(ring);
    memset(ring, 0, sizeof *ring);
    ri->stages = stages;
    ri->producers = producers;
    ri->consumers = consumers;
    ri->flags = flags;
    ri->nshards = nshards;
    /* Poll only when every thread of the ring can have its own CPU (else the
     * poll steals the CPU the awaited thread needs) and parking is not asked. */
    ri->spin_ns = flags & ABAR_WAIT_SPIN ? UINT32_MAX
                : flags & ABAR_WAIT_PARK ? 0 : crowded ? RING_CROWDED_NS : spin_budget();
    ri->ident = id ? id : 1;
    ri->bars = bars;
    ri->busy = busy;
    ri->check = ring_check(ri->ident, bars);
    atomic_init(&ri->cancelled, 0);
    atomic_init(&ri->issued[0], 0);
    atomic_init(&ri->issued[1], 0);
    /* release: publishes the fields to whoever sees the magic */
    atomic_store_explicit(&ri->magic, RING_MAGIC_LIVE, memory_order_release);
    return 0;
}

int abar_ring_destroy(abar_ring_t *ring)
{
    struct ring_impl *ri = live(ring);
    if (ri == NULL) return EINVAL;
    /* seq_cst: pairs with the waiters' seq_cst registration (wait_phase). */
    for (uint32_t i = 0; i < ri->nshards; i++)
        if (atomic_load(&ri->busy[i].n) != 0) return EBUSY;
    for (uint32_t k = 0; k < 2 * ri->stages; k++) {
        /* No ring thread is inside a wait (checked above); EBUSY here means
         * an arrival is finishing its phase (a few stores): let it. */
        int r;
        while ((r = abar_destroy(&ri->bars[k])) == EBUSY) sched_yield();
    }
    atomic_store(&ri->magic, RING_MAGIC_DEAD);
    free(ri->bars);
    ri->bars = NULL;
    ri->busy = NULL;
    ri->check = 0;
    ri->ident = 0;
    return 0;
}

static int start(abar_ring_t *ring, abar_ring_pos_t *pos, uint32_t side)
{
    struct ring_impl *ri = live(ring);
    if (ri == NULL || pos == NULL) return EINVAL;
    int s = side == POS_PRODUCER ? 0 : 1;
    uint32_t max = s == 0 ? ri->producers : ri->consumers;
    /* relaxed: a rank counter; the caller hands the position to its thread. */
    uint32_t n = atomic_load_explicit(&ri->issued[s], memory_order_relaxed);
    do {
        if (n >= max) return EAGAIN;
    } while (!atomic_compare_exchange_weak_explicit(&ri->issued[s], &n, n + 1,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed));
    memset(pos, 0, sizeof *pos);
    pos->rank = n;
    pos->_ring = ri->ident;
    pos->_state = side;
    pos->_shard = (s == 0 ? n : ri->producers + n) % ri->nshards;
    return 0;
}

int abar_ring_producer_start(abar_ring_t *ring, abar_ring_pos_t *pos)
{
    return start(ring, pos, POS_PRODUCER);
}

int abar_ring_consumer_start(abar_ring_t *ring, abar_ring_pos_t *pos)
{
    return start(ring, pos, POS_CONSUMER);
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
    int r = wait_phase(ri, b, pos->phase + !producer, mode, abstime, pos->_shard);
    if (r == 0) pos->_state |= POS_HOLD;
    return r;
}

/* producer_commit and consumer_release: signal the other side, no wait. */
static int give(abar_ring_t *ring, abar_ring_pos_t *pos, unsigned side)
{
    struct ring_impl *ri = live(ring);
    if (ri == NULL || !pos_ok(ri, pos, side)) return EINVAL;
    if (!(pos->_state & POS_HOLD)) return EPERM;          /* not taken, or given twice */
    if (cancelled(ri)) return ECANCELED;
    abar_t *b = side == POS_PRODUCER ? filled(ri, pos->index) : ready(ri, pos->index);
    /* In step: a held position at lap n finds its barrier in phase n (it
     * cannot complete without this arrival).  Else the position is a stale
     * copy: refuse it rather than count an arrival in a later phase. */
    if (abar_phase(b) != pos->phase) return EINVAL;
    /* The core arrive is a release: a producer's writes to the slot reach
     * every consumer whose wait sees filled's phase complete; a consumer's
     * reads happen before the producer that sees ready's phase overwrites it. */
    int r = abar_token_error(abar_arrive(b));
    if (r == 0) advance(ri, pos);
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

/* ---- control ----------------------------------------------------------------- */

int abar_ring_cancel(abar_ring_t *ring)
{
    struct ring_impl *ri = live(ring);
    if (ri == NULL) return EINVAL;
    /* seq_cst: set before the barriers are cancelled; a poller sees either
     * the flag or (through the core) the cancelled barrier. */
    atomic_store(&ri->cancelled, 1);
    for (uint32_t k = 0; k < 2 * ri->stages; k++) abar_cancel(&ri->bars[k]);
    return 0;
}

uint32_t abar_ring_stages(const abar_ring_t *ring)
{
    struct ring_impl *ri = live((abar_ring_t *)ring);
    return ri ? ri->stages : 0;
}
