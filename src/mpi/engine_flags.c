/*
 * engine_flags.c - every rank on one node, no completion function: one
 * flag a rank in the node's shared memory.
 *
 * Rank r's flag (a line of its own) counts the phases r has arrived in, and
 * phase k is complete once every flag is above k.  An arrival is one plain
 * store to the rank's own line: no read-modify-write, so the arriving CPU
 * does not stall while the line comes back from the ranks that read it; the
 * store drains while the caller computes.  A wait reads the flags (the
 * misses overlap).  Against a shared counter, whose arrival is a contended
 * RMW (a line transfer the caller waits for) and whose waiters also miss
 * on the release, an overlapped iteration leaves about one miss exposed.
 *
 * Hierarchical (several threads a rank): the rank's threads arrive on its
 * private core barrier, `local`, whose completion (the rank's last arrival)
 * stores the rank's flag; every thread waits on the flags itself.  No
 * driver, no mutex, no release barrier: a phase costs the local barrier,
 * one store, and the waiters' reads.
 *
 * Parking.  A waiter past its spin budget reads `futex`, counts itself in
 * `sleepers`, fences, looks at the flags (and its rank's cancel) again, and
 * sleeps on `futex` while it holds the value read.  An arrival stores its
 * flag, then reads `sleepers`; if anyone sleeps it bumps `futex` and wakes
 * every sleeper.  Store then load on both sides: a Dekker pair, so one of
 * the two sees the other.  Its fence is asymmetric where Linux allows
 * (every rank registered for membarrier's GLOBAL_EXPEDITED at init): the
 * arrival keeps only the compiler's order, and the sleeper makes every
 * running thread of those processes execute a full fence.  An arriver whose
 * flag store is still buffered is running, so the fence orders that store
 * before the sleeper's second look; one that is not running has been
 * switched out, which fences too.  Without membarrier both sides fence.
 * abar_mpi_cancel bumps `futex` and wakes too (after setting `cancelled`,
 * which a sleeper reads after it read the word).
 */
#include "mpi_internal.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How long a waiter spins before it parks: the core's default budget, or,
 * while this rank's waits have been parking, 16 times that.  Parking is
 * self-sustaining: once waiters sleep, every phase waits for their
 * wake-ups (tens of µs each on a VM), longer than the budget, so the next
 * waiters park too; measured on the 16-core host (16 threads on 16 CPUs),
 * 2.7 µs phases turned into 100 µs ones for good.  The longer budget
 * covers the wake-ups, and the short one comes back with the first wait
 * that ends within it. */
#define FLAGS_SPIN_NS 50000u
#define FLAGS_SLEPT_SPIN_NS 800000u

static inline _Atomic uint64_t *flag_of(struct shm_flags *f, int rank) { return &f->rank[rank].arrived; }

/* Whether phase k is complete: every flag above k.  Remembers the answer
 * in m->completed.  acquire (the flags): pairs with each arrival's release
 * store, so the caller sees what every rank wrote before its arrival;
 * release/acquire on `completed` passes that on to a thread that finds
 * the answer there. */
static bool flags_done(struct mpi_impl *m, uint64_t k)
{
    if (atomic_load_explicit(&m->completed, memory_order_acquire) > k) return true;
    uint64_t low = UINT64_MAX;
    for (int i = 0; i < m->size; i++) {
        uint64_t v = atomic_load_explicit(flag_of(m->fl, i), memory_order_acquire);
        if (v <= k) return false;
        if (v < low) low = v;
    }
    /* A lower bound, however stale another thread's store: two such stores
     * racing only make a later caller scan again.  Written only when it
     * grows: a rank's threads all finish the same phase. */
    if (atomic_load_explicit(&m->completed, memory_order_relaxed) < low)
        atomic_store_explicit(&m->completed, low, memory_order_release);
    return true;
}

/* The phases complete so far (the smallest flag). */
uint64_t abar_mpi__flags_phase(struct mpi_impl *m)
{
    uint64_t low = UINT64_MAX;
    for (int i = 0; i < m->size; i++) {
        uint64_t v = atomic_load_explicit(flag_of(m->fl, i), memory_order_acquire);
        if (v < low) low = v;
    }
    return low;
}

static void wake_all(struct shm_flags *f)
{
    atomic_fetch_add(&f->futex, 1); /* seq_cst: after what the sleeper must see */
    int saved = errno; /* the caller's errno is not ours to change */
    syscall(SYS_futex, (void *)&f->futex, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    errno = saved;
}

/* The rank has arrived in `arrived` phases: its flag says so, and its
 * sleepers are woken.  No locked instruction unless someone sleeps. */
static void publish(struct mpi_impl *m, uint64_t arrived)
{
    struct shm_flags *f = m->fl;
    /* release: everything this rank wrote before arriving reaches whoever
     * sees the flag (a plain store on x86: it drains while we compute) */
    atomic_store_explicit(flag_of(f, m->rank), arrived, memory_order_release);
    /* The store, then the look at `sleepers` (the Dekker pair above). */
    if (m->fl_asym) atomic_signal_fence(memory_order_seq_cst);
    else atomic_thread_fence(memory_order_seq_cst);
    /* relaxed: ordered by the fence (or the sleeper's membarrier) */
    if (atomic_load_explicit(&f->sleepers, memory_order_relaxed)) wake_all(f);
    /* release: our last access to the segment and to m; destroy acquires */
    atomic_store_explicit(&m->published, arrived, memory_order_release);
}

/* An arrival.  Its only locked instructions come before its flag store: a
 * locked instruction after it (x86) would wait for the store to drain, that
 * is, for the flag's line to come back from the ranks that read it, and the
 * caller would pay that transfer before it computes.  So the registration
 * in `inside` (unless the caller holds one: `registered`) ends before the
 * store, and `published` tells destroy when the store and the wake-up are
 * done: until then `next` is ahead of it, and destroy waits (lifecycle.c). */
abar_token_t abar_mpi__flags_arrive(struct mpi_impl *m, bool registered)
{
    if (!registered) atomic_fetch_add(&m->inside, 1); /* seq_cst: pairs with destroy's read */
    abar_token_t t;
    /* relaxed: this rank's own count; the CAS below settles races */
    uint64_t k = atomic_load_explicit(&m->next, memory_order_relaxed);
    /* relaxed: a cancel before this call is seen (coherence); one racing
     * with it may go either way, as in the core */
    if (atomic_load_explicit(&m->cancelled, memory_order_relaxed))
        t = tok_err(ECANCELED);
    else if (k > 0 && !flags_done(m, k - 1)) /* one participant a rank: its last phase is open */
        t = tok_err(EINVAL);
    /* Two threads of a flat rank arriving at once: one of them is refused.
     * relaxed: process-private; `published` orders it for destroy. */
    else if (!atomic_compare_exchange_strong_explicit(&m->next, &k, k + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
        t = tok_err(EINVAL);
    else
        t = (abar_token_t){ .raw = k, .id = m->tok_id };
    if (!registered) atomic_fetch_sub_explicit(&m->inside, 1, memory_order_release);
    if (t.id == 0) return t;
    publish(m, k + 1);
    return t;
}

/* Hierarchical: `local`'s completion, run by the rank's last arrival of
 * the phase.  Completions run one after the other (the core's
 * release/acquire chain on local), so `next` needs no RMW here.  Its
 * caller holds `inside` (an arrival), so `published` keeps up with `next`
 * before destroy can look. */
void abar_mpi__flags_post(struct mpi_impl *m)
{
    const uint64_t k = atomic_load_explicit(&m->next, memory_order_relaxed);
    atomic_store_explicit(&m->next, k + 1, memory_order_relaxed);
    publish(m, k + 1); /* the local arrivals' writes: the completion acquired them */
}

/* Hierarchical: one thread's arrival, on the rank's local barrier.  Its
 * token carries local's phase, which is the node's phase (local's phase k
 * completes exactly when the rank arrives in phase k).  Registered in
 * `inside` by the caller. */
abar_token_t abar_mpi__flags_arrive_local(struct mpi_impl *m)
{
    /* relaxed: as in abar_mpi__flags_arrive */
    if (atomic_load_explicit(&m->cancelled, memory_order_relaxed)) return tok_err(ECANCELED);
    abar_token_t t = abar_arrive(&m->local);
    if (abar_token_error(t)) return t;
    /* relaxed: read only by destroy, after every caller has left (`inside`) */
    atomic_fetch_add_explicit(&m->arrivals, 1, memory_order_relaxed);
    return (abar_token_t){ .raw = t.raw, .id = m->tok_id };
}

/* The sleeper's half of the fence pair. */
static void fence_heavy(const struct mpi_impl *m)
{
    if (m->fl_asym) {
        int saved = errno;
        /* cannot fail: every rank registered at init */
        syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
        errno = saved;
    }
    atomic_thread_fence(memory_order_seq_cst);
}

/* Parks until the word moves (an arrival saw us, or a cancel), the
 * deadline passes (ETIMEDOUT), or phase k turns out complete (0). */
static int park(struct mpi_impl *m, uint64_t k, const struct timespec *abstime)
{
    struct shm_flags *f = m->fl;
    const uint32_t v = atomic_load(&f->futex);
    atomic_fetch_add(&f->sleepers, 1);
    fence_heavy(m);
    int r = -1, saved = errno;
    if (flags_done(m, k)) r = 0;
    else if (atomic_load(&m->cancelled)) r = ECANCELED;
    /* woken, the word moved, or a signal: the caller looks again */
    else if (syscall(SYS_futex, (void *)&f->futex, FUTEX_WAIT_BITSET, v, abstime, NULL,
                     FUTEX_BITSET_MATCH_ANY) == -1 && errno == ETIMEDOUT)
        r = ETIMEDOUT;
    errno = saved;
    atomic_fetch_sub(&f->sleepers, 1);
    return r;
}

/* Hierarchical: local's open phase.  Not abar_phase(local): local opens
 * phase k+1 to arrivals a moment before it publishes k complete, and a
 * thread that arrived in that moment holds a token for k+1.  Cancelled,
 * abar_current says so: then the last phase that can have been opened. */
static uint64_t local_open(struct mpi_impl *m)
{
    abar_token_t c = abar_current(&m->local);
    return abar_token_error(c) ? abar_phase(&m->local) + 1 : c.raw;
}

/* Phase k is complete on the node (every flag is above k): returns 0 once
 * it is complete here too.  Hierarchical, that is once local has opened
 * its phase k+1: its last arrival stored the flag from local's completion,
 * so other ranks, and this rank's waiters, may see the phase complete a
 * few instructions before local takes arrivals again.  A thread released
 * in that moment would have its next arrival refused: it waits for the
 * completer instead (a spin, then yields should the completer have lost
 * its CPU). */
static int settle(struct mpi_impl *m, uint64_t k)
{
    if (m->threads == 1) return 0;
    for (unsigned i = 0; abar_phase(&m->local) <= k; i++) {
        if (i < 256 && !m->oversub) cpu_relax();
        else sched_yield();
    }
    return 0;
}

int abar_mpi__flags_wait(struct mpi_impl *m, abar_token_t t, const struct timespec *abstime, bool test)
{
    if (t.id == 0) return t.raw == ECANCELED ? ECANCELED : EINVAL; /* the arrival's error */
    /* another barrier's token, or a phase this rank (flat) or no thread of
     * it (hierarchical: local's open phase) has arrived in */
    if (t.id != m->tok_id) return EINVAL;
    if (m->threads == 1 ? t.raw >= atomic_load_explicit(&m->next, memory_order_relaxed)
                        : t.raw > local_open(m))
        return EINVAL;
    const uint64_t k = t.raw;
    if (flags_done(m, k)) return settle(m, k);
    if (test) {
        if (atomic_load_explicit(&m->cancelled, memory_order_relaxed)) return ECANCELED;
        /* oversubscribed: a caller polling test in a loop would hold the
         * CPU that a late rank needs */
        if (m->oversub) sched_yield();
        return EBUSY;
    }
    const uint64_t deadline = abstime ? (uint64_t)abstime->tv_sec * 1000000000u + (uint64_t)abstime->tv_nsec
                                      : UINT64_MAX;
    const bool spin_forever = m->wait_flags & ABAR_WAIT_SPIN;
    /* relaxed (fl_slept): a hint */
    const uint64_t budget =
        atomic_load_explicit(&m->fl_slept, memory_order_relaxed) ? FLAGS_SLEPT_SPIN_NS : FLAGS_SPIN_NS;
    uint64_t t0 = 0;
    for (unsigned i = 1; !(m->wait_flags & ABAR_WAIT_PARK); i++) {
        if (flags_done(m, k)) {
            if ((t0 == 0 || now_ns() - t0 < FLAGS_SPIN_NS) &&
                atomic_load_explicit(&m->fl_slept, memory_order_relaxed))
                atomic_store_explicit(&m->fl_slept, 0, memory_order_relaxed);
            return settle(m, k);
        }
        if (atomic_load_explicit(&m->cancelled, memory_order_relaxed)) return ECANCELED;
        if (m->oversub) sched_yield();
        else cpu_relax();
        if (i % 64 == 0 || m->oversub) {
            const uint64_t now = now_ns();
            if (t0 == 0) t0 = now;
            if (now >= deadline) return flags_done(m, k) ? settle(m, k) : ETIMEDOUT;
            if (now - t0 >= budget && !spin_forever) break;
        }
    }
    for (;;) {
        int r = park(m, k, abstime);
        if (r == 0 || flags_done(m, k)) {
            if (!(m->wait_flags & ABAR_WAIT_PARK) && !atomic_load_explicit(&m->fl_slept, memory_order_relaxed))
                atomic_store_explicit(&m->fl_slept, 1, memory_order_relaxed);
            return settle(m, k);
        }
        if (r > 0) return r;
        if (atomic_load(&m->cancelled)) return ECANCELED;
        if (abstime && now_ns() >= deadline) return ETIMEDOUT;
    }
}

/* abar_mpi_cancel's part: wakes this node's sleepers, ours among them (the
 * others look again and sleep on). */
void abar_mpi__flags_cancel(struct mpi_impl *m) { wake_all(m->fl); }

/* At init (collective): whether the arrivals may skip their fence, i.e.
 * whether every rank's process is registered for GLOBAL_EXPEDITED. */
bool abar_mpi__flags_asym(MPI_Comm comm)
{
    int saved = errno;
    int mine = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0, all = 0;
    errno = saved;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return false;
    return all;
}
