/* futex.c - parking: the spin budget, the CPU count, the clock.  The
 * wait/wake calls themselves are the backend's (os.h). */
#define _GNU_SOURCE
#include "abar_internal.h"
#include "os.h"

#include <stdlib.h>

/* How long a waiter spins before it parks, unless ABAR_SPIN_NS says otherwise.
 * Long enough to cover a phase when every thread has its own core (a few µs),
 * short enough that a thread blocked for 10 ms burns well under 1 ms. */
#define ABAR_DEFAULT_SPIN_NS 50000u

static _Atomic uint64_t spin_ns_cache = UINT64_MAX;
_Atomic unsigned abar__ncpu_cache;

uint64_t abar__spin_ns(void)
{
    /* relaxed: a racy first computation yields the same value in every thread */
    uint64_t v = atomic_load_explicit(&spin_ns_cache, memory_order_relaxed);
    if (v != UINT64_MAX) return v;
    v = ABAR_DEFAULT_SPIN_NS;
    const char *e = getenv("ABAR_SPIN_NS");
    if (e && *e) {
        char *end;
        unsigned long long x = strtoull(e, &end, 10);
        if (*end == '\0' && x < UINT64_MAX) v = x;
    }
    atomic_store_explicit(&spin_ns_cache, v, memory_order_relaxed);
    return v;
}

/* The spin budget adapts to what parking costs on this machine, two ways.
 *
 * A park is worth its wake-up only when the phase then runs on for long: a
 * waiter woken soon after it parked burnt the wake-up (on a VM, a halted
 * vCPU can take tens of µs to milliseconds to run again) where spinning a
 * little longer would have cost little CPU.  So a release that wakes
 * sleepers (abar__publish) looks at how long ago the first of them parked:
 * sooner than ABAR__SPIN_MAX_NS doubles the budget of every later wait on
 * the barrier, up to that bound; later resets it.  Without that, one hiccup
 * longer than the budget (a vCPU preempted by its host) parks the waiters,
 * and the wake-ups it takes then cost more than the hiccup did.
 *
 * And a park costs the barrier at least the wake-up itself: the sleeper
 * must run again before it can arrive at the next phase, and every other
 * participant waits for that.  So the budget is never below the time
 * sleepers have recently taken to run again after a wake (wake_ns: each
 * woken sleeper measures it from the completer's woke_at): spin as long as
 * a park would cost, then park.  (Twice that burnt twice the CPU in long
 * waits and did no better under emulated steal: docs/lab/steal.md.)  Where
 * wake-ups are fast (µs) that changes little; on a busy host whose halted
 * vCPUs come back in milliseconds it keeps the waiters spinning through
 * the short hiccups that would otherwise park them, each park then costing
 * a millisecond wake (measured: docs/lab/steal.md).
 *
 * A thread that waits 10 ms for a late arrival still burns at most
 * ABAR__SPIN_MAX_NS, and only in the first such wait after a run of short
 * ones or of slow wake-ups.  All four words are hints: relaxed, racy
 * updates lose at most one step. */
#define ABAR__SPIN_MAX_NS 800000u
#define ABAR__SPIN_SHIFT_MAX 4u

/* The budget abar__block spins before parking: the base (ABAR_SPIN_NS, or
 * `factor` times it right after a release that woke sleepers) doubled
 * spin_shift times, and at least the recent wake-up time, but never
 * past ABAR__SPIN_MAX_NS by the doubling or the wake-ups. */
uint64_t abar__spin_budget(const struct abar_impl *b, unsigned factor)
{
    const uint64_t base = abar__spin_ns() * factor;
    if (base == 0) return 0; /* ABAR_SPIN_NS=0: park at once, whatever was measured */
    if (base >= ABAR__SPIN_MAX_NS) return base;
    uint64_t v = base << atomic_load_explicit(&b->spin_shift, memory_order_relaxed);
    const uint64_t w = atomic_load_explicit(&b->wake_ns, memory_order_relaxed);
    if (w > v) v = w;
    return v < ABAR__SPIN_MAX_NS ? v : ABAR__SPIN_MAX_NS;
}

/* The budget while the host takes CPUs or phases stall for milliseconds
 * (policy.c's park-soon stretch): as long as a park would cost the barrier,
 * the recent wake-up time, and at most the base.  Spinning that long and
 * then parking costs at most twice the better of the two, whatever the
 * phase's length (the ski-rental rule), and leaves the vCPUs of a phase
 * that stalls idle for the host to take: parking at once instead made every
 * phase shorter than a wake-up pay one (docs/lab/steal.md). */
uint64_t abar__spin_lean(const struct abar_impl *b)
{
    const uint64_t w = atomic_load_explicit(&b->wake_ns, memory_order_relaxed);
    const uint64_t base = abar__spin_ns();
    return w < base ? w : base;
}

/* A waiter is about to set PARKED (abar__block).  A barrier told to park at
 * once has no budget to adapt: nothing to note (nor to learn below). */
void abar__spin_parking(struct abar_impl *b)
{
    if (b->flags & ABAR_WAIT_PARK) return;
    atomic_store_explicit(&b->parked_at, abar__now_ns(), memory_order_relaxed);
}

/* A completer is about to wake the sleepers of a phase (abar__publish,
 * before the release: the barrier may be freed after it). */
void abar__spin_learn(struct abar_impl *b)
{
    if (b->flags & ABAR_WAIT_PARK) return;
    const uint64_t now = abar__now_ns();
    const uint64_t at = atomic_load_explicit(&b->parked_at, memory_order_relaxed);
    const uint32_t s = atomic_load_explicit(&b->spin_shift, memory_order_relaxed);
    uint32_t n = 0;
    if (now - at < ABAR__SPIN_MAX_NS) n = s < ABAR__SPIN_SHIFT_MAX ? s + 1 : s;
    if (n != s) atomic_store_explicit(&b->spin_shift, n, memory_order_relaxed);
    atomic_store_explicit(&b->woke_at, now, memory_order_relaxed);
}

/* A sleeper is back from FUTEX_WAIT, woken (abar__block): how long since the
 * completer woke it.  wake_ns follows a slower wake-up at once and a faster
 * one by an eighth of the difference, so one fast wake does not undo what
 * a run of slow ones showed.  A wake by a cancel or a spurious return,
 * measured against an older woke_at, reads long: that only raises the
 * budget towards its bound, and the fast wakes that follow bring it back. */
void abar__spin_woken(struct abar_impl *b)
{
    if (b->flags & ABAR_WAIT_PARK) return;
    const uint64_t lat = abar__now_ns() - atomic_load_explicit(&b->woke_at, memory_order_relaxed);
    const uint64_t w = atomic_load_explicit(&b->wake_ns, memory_order_relaxed);
    const uint64_t n = lat >= w ? (lat < ABAR__SPIN_MAX_NS ? lat : ABAR__SPIN_MAX_NS) : w - (w - lat) / 8;
    if (n != w) atomic_store_explicit(&b->wake_ns, n, memory_order_relaxed);
}

/* The CPUs this process may run on: the main thread's affinity mask (where
 * taskset, a cpuset or a container's CPU set shows), at most the online
 * CPUs, and at most what a CPU quota buys (a cgroup's, cpus.c): the
 * backend's abar__os_ncpu.  Read once, when the library is loaded (below),
 * before a program pins its threads to a CPU each: the calling thread's
 * own mask would then say 1. */
unsigned abar__ncpu(void)
{
    unsigned v = atomic_load_explicit(&abar__ncpu_cache, memory_order_relaxed);
    if (v) return v;
    v = abar__os_ncpu();
    atomic_store_explicit(&abar__ncpu_cache, v, memory_order_relaxed);
    return v;
}

__attribute__((constructor)) static void ncpu_at_load(void) { (void)abar__ncpu(); }

unsigned abar_ncpu(void) { return abar__ncpu(); }

uint64_t abar__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
