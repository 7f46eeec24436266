/*
 * ring.c - producer/consumer rings on core barriers (seed 002, SPEC §4): the
 * life cycle (init, destroy, the start calls, cancel) and the waiter's
 * process-wide barrier.  The layout and the protocol: ring_internal.h; the
 * four steps: ring_steps.c.
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

/* ---- the waiter's half of the sleepers handshake ---------------------------- */

#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/membarrier.h>) && __has_include(<sys/syscall.h>)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#define RING_MEMBARRIER 1
#endif
#endif

int abar__ring_asym_available(void)
{
#ifdef RING_MEMBARRIER
    /* 0: not asked yet, 1: registered, -1: not available.  relaxed: the
     * registration is idempotent; racing callers may both register. */
    static _Atomic int state;
    int s = atomic_load_explicit(&state, memory_order_relaxed);
    if (s == 0) {
        long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        s = q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0
                ? 1 : -1;
        atomic_store_explicit(&state, s, memory_order_relaxed);
    }
    return s == 1;
#else
    return 0;
#endif
}

/* A full barrier on every running thread of the process (membarrier), so a
 * giver's store of done and its later read of sleepers cannot pass each
 * other as seen from here; false where there is none (the givers then fence
 * themselves: ri->asym is 0) or it failed (the caller must not park). */
bool abar__ring_heavy_barrier(struct ring_impl *ri)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (!ri->asym) return true;
#ifdef RING_MEMBARRIER
    return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
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
    size_t ranks = (size_t)producers + consumers;
    size_t bells = (2 * sizeof(abar_t) + RING_APART - 1) / RING_APART * RING_APART;
    size_t arrs = ((producers > 1) + (size_t)(consumers > 1)) * stages;
    size_t total = bells + 2 * sizeof(struct ring_done) + ranks * sizeof(struct ring_rank) +
                   arrs * sizeof(struct ring_arrivals) + nshards * sizeof(struct ring_busy);
    total = (total + RING_APART - 1) / RING_APART * RING_APART;   /* C11: a multiple */
    char *block = aligned_alloc(RING_APART, total);
    if (block == NULL) return ENOMEM;
    abar_t *bars = (abar_t *)(void *)block;
    /* The bells only park: one arrival rings one (see ring_internal.h).  The
     * ring polls itself first (ABAR_WAIT_SPIN: poll, never park; ABAR_WAIT_PARK:
     * park at once).  More ring threads than CPUs (abar_ncpu: the affinity
     * mask and any cgroup CPU quota): poll only briefly (RING_CROWDED_NS),
     * yielding, since a long poll holds the CPU that the awaited thread
     * needs, but a hand-off is often imminent. */
    bool crowded = (int64_t)producers + consumers > (int64_t)abar_ncpu();
    abar_attr_t a = { NULL, NULL, ABAR_WAIT_PARK };
    /* zeroed first: abar_init reads `magic` to refuse a live barrier, and a
     * fresh block may hold an old one's bytes */
    memset(bars, 0, 2 * sizeof *bars);
    if (abar_init(&bars[FILL], 1, &a) || abar_init(&bars[FREE], 1, &a)) {
        free(block);  /* cannot happen: the arguments are constant */
        return EINVAL;
    }
    char *p = block + bells;
    struct ring_done *done = (struct ring_done *)(void *)p;
    p += 2 * sizeof(struct ring_done);
    struct ring_rank *rank = (struct ring_rank *)(void *)p;
    p += ranks * sizeof(struct ring_rank);
    struct ring_arrivals *arr[2] = { NULL, NULL };
    if (producers > 1) { arr[FILL] = (struct ring_arrivals *)(void *)p; p += stages * sizeof *arr[FILL]; }
    if (consumers > 1) { arr[FREE] = (struct ring_arrivals *)(void *)p; p += stages * sizeof *arr[FREE]; }
    struct ring_busy *busy = (struct ring_busy *)(void *)p;
    for (int s = 0; s < 2; s++) {
        atomic_init(&done[s].done, 0);
        atomic_init(&done[s].sleepers, 0);
        for (uint32_t k = 0; arr[s] && k < stages; k++) atomic_init(&arr[s][k].n, 0);
    }
    for (size_t i = 0; i < ranks; i++) {
        atomic_init(&rank[i].step, 0);
        rank[i].seen = 0;
    }
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
    ri->spin_ns = flags & ABAR_WAIT_SPIN ? UINT32_MAX
                : flags & ABAR_WAIT_PARK ? 0 : crowded ? RING_CROWDED_NS : spin_budget();
    ri->crowded = crowded;
    ri->asym = (uint8_t)abar__ring_asym_available();
    ri->ident = id ? id : 1;
    ri->bars = bars;
    ri->done = done;
    ri->rank = rank;
    ri->arr[FILL] = arr[FILL];
    ri->arr[FREE] = arr[FREE];
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
    /* seq_cst: pairs with the waiters' seq_cst registration (abar__ring_wait_done). */
    for (uint32_t i = 0; i < ri->nshards; i++)
        if (atomic_load(&ri->busy[i].n) != 0) return EBUSY;
    for (int k = 0; k < 2; k++) {
        /* No ring thread is inside a wait (checked above); EBUSY here means
         * a giver's ring is finishing its phase (a few stores): let it. */
        while (abar_destroy(&ri->bars[k]) == EBUSY) sched_yield();
    }
    atomic_store(&ri->magic, RING_MAGIC_DEAD);
    free(ri->bars);
    ri->bars = NULL;
    ri->done = NULL;
    ri->rank = NULL;
    ri->arr[FILL] = ri->arr[FREE] = NULL;
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
    /* seq_cst: set before the bells are cancelled; a waiter sees either
     * the flag or (through the core) the cancelled bell. */
    atomic_store(&ri->cancelled, 1);
    for (int k = 0; k < 2; k++) abar_cancel(&ri->bars[k]);
    return 0;
}

uint32_t abar_ring_stages(const abar_ring_t *ring)
{
    struct ring_impl *ri = live((abar_ring_t *)ring);
    return ri ? ri->stages : 0;
}
