/*
 * ring.c - producer/consumer rings on core barriers (seed 002, SPEC §4): the
 * life cycle (init, destroy, the start calls, cancel).  The layout and the
 * protocol: ring_internal.h; the four steps: ring_steps.c.
 */
#define _GNU_SOURCE
#include "ring_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    size_t ranks = (size_t)producers + consumers;
    abar_t *bars = aligned_alloc(64, nb + nshards * sizeof(struct ring_busy) +
                                         ranks * sizeof(struct ring_step));
    if (bars == NULL) return ENOMEM;
    /* The ring polls itself and its barriers park at once (the core's own
     * adaptive spin counts the waiters of one barrier only, and a ring
     * spreads its waiters over 2*stages barriers).  ABAR_WAIT_SPIN: poll,
     * never park.  ABAR_WAIT_PARK: park at once.  More ring threads than
     * CPUs (abar_ncpu: the affinity mask and any cgroup CPU quota): poll
     * only briefly (RING_CROWDED_NS), since a long poll holds the CPU that
     * the awaited thread needs, but a hand-off is often imminent. */
    bool crowded = (int64_t)producers + consumers > (int64_t)abar_ncpu();
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
    struct ring_step *steps = (struct ring_step *)(void *)(busy + nshards);
    for (size_t i = 0; i < ranks; i++) atomic_init(&steps[i].n, 0);

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
    /* seq_cst: pairs with the waiters' seq_cst registration (abar__ring_wait_phase). */
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
