/* wait.c - waiting for a phase: the token judged, then spin and park
 * (abar__block); abar_wait, abar_test, abar_wait_until.  arrive_wait.c has
 * abar_arrive_and_wait. */
#include "wait.h"

#include <errno.h>
#include <sched.h>

enum { WAIT_BLOCK, WAIT_TEST };
enum { OPEN = -1 }; /* judge: the token's phase is the open one (EBUSY, may park) */
enum { PARK = -2 }; /* spin: its time is up, park */

/* What token t means against a snapshot (cur completed phases, state s):
 * 0 its phase is complete, EBUSY not yet (its release is being published),
 * OPEN not yet (its phase is open: a waiter may park), or the error a wait
 * returns at once. */
static int judge(const struct abar_impl *b, abar_token_t t, uint64_t cur, uint64_t s)
{
    if (t.raw < cur) return 0;              /* a completed phase, however old */
    uint64_t open = abar__state_phase(cur, s);
    if (t.raw > open) return EINVAL;        /* no arrive ever returned this: forged */
    if (t.raw < open) return EBUSY;         /* completed; `phase` is being published */
    if (s & ST_FINISHED) return ECANCELED;  /* a phase after the last drop */
    /* Cancelled: report it, unless the phase's last arrival was already
     * counted, in which case its release is imminent and the phase completes. */
    if ((s & ST_CANCELLED) && !st_completing(s)) return ECANCELED;
    if (abar__in_completion_of(b)) return EDEADLK; /* waiting on b from b's completion */
    return OPEN;
}

static inline int look(struct abar_impl *b, abar_token_t t, uint64_t *sp)
{
    uint64_t cur = abar__snapshot(b, sp);
    return judge(b, t, cur, *sp);
}

static inline bool pending_result(int r) { return r == EBUSY || r == OPEN; }

/* How many times the usual spin budget a waiter spins after a release
 * that woke sleepers (abar__block): 250 µs by default, so a thread that waits
 * 10 ms for a late arrival still burns well under 1 ms. */
#define ABAR__SLEPT_SPIN_FACTOR 5u

/* How long a waiter keeps spinning, at most, while the sleepers of the last
 * phase are still coming back from FUTEX_WAIT (abar__block): longer than a
 * busy host takes to run a halted vCPU again (milliseconds; with 2 ms,
 * wake-ups slower than that kept a barrier parked for good: docs/lab/steal.md),
 * and still a bound if a woken sleeper never comes back (its process
 * stopped). */
#define ABAR__WAKING_SPIN_NS 20000000u
/* Past its budget, an oversubscribed waiter parks after its turns or this
 * long (abar__block): futex.c's longest budget. */
#define ABAR__TURNS_NS 800000u

/* An absolute CLOCK_MONOTONIC deadline in ns: a time before the epoch is
 * past (0), one beyond 2^64 - 1 ns (year 2554) never comes. */
static inline uint64_t deadline_ns(const struct timespec *ts)
{
    if (ts->tv_sec < 0) return 0;
    if ((uint64_t)ts->tv_sec > (UINT64_MAX - 999999999u) / 1000000000u) return UINT64_MAX;
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* Spins for phase t.raw, bounded in time, unless told to park at once
 * (then or when its time is up: PARK); oversubscribed, each round yields
 * the CPU.  Returns 0 (released), the error a look found, ETIMEDOUT at the
 * deadline (ns, UINT64_MAX: none), or PARK. */
static int spin(struct abar_impl *b, abar_token_t t, uint64_t deadline)
{
    struct abar__release *rw = rel(b);
    uint64_t s;
    int r;

    bool oversubscribed = oversubscribed_by(b);
    /* After a release that woke sleepers, spin longer: the woken threads
     * come back one by one (a sleeping vCPU can take tens of µs to run
     * again), and waiters that park before the last of them arrives must
     * be woken in turn, so that once parked a barrier stays parked, every
     * phase as slow as a wake-up (measured: docs/lab/steal.md).  The budget
     * also grows while parks turn out short (abar__spin_budget).  relaxed:
     * a hint.  While the host takes CPUs or phases stall for milliseconds
     * (policy.c), a waiter not told to spin spins only as long as a park
     * costs, a wake-up (abar__spin_lean), and never longer for the woken;
     * oversubscribed too (its yields keep every CPU busy as well). */
    const bool adapts = !(b->flags & (ABAR_WAIT_SPIN | ABAR_WAIT_PARK));
    const bool soon = adapts && abar__park_soon();
    uint64_t budget = (b->flags & ABAR_WAIT_PARK) ? 0
                      : soon ? abar__spin_lean(b)
                             : abar__spin_budget(b, atomic_load_explicit(&b->slept, memory_order_relaxed)
                                                        ? ABAR__SLEPT_SPIN_FACTOR : 1);
    /* How fast phases go (policy.c).  Oversubscribed, nearly every wait
     * comes here: one in 64 is a sample, as of lean waits (a sample costs
     * three RMWs of shared lines: docs/lab/steal.md). */
    if (adapts && oversubscribed) abar__spin_lean_waited(b, t.raw);
    else if (adapts) abar__spin_phase(b, t.raw, soon);
    uint64_t t0 = 0; /* read lazily: most waits end before the first clock read */
    uint64_t t1 = 0; /* when the budget started: t0, or when the last sleeper was seen */
    uint64_t seen = 0; /* the last clock read */
    for (unsigned i = 1; budget || (b->flags & ABAR_WAIT_SPIN); i++) {
        /* Poll the release words: only a completer and a cancel write them,
         * and they share no line with the arrivals.  The usual news: our
         * phase is released.  acquire: pairs with the completer's release
         * store of phase. */
        if (released(rw, t)) return 0;
        /* A cancel flags the futex word; a full look settles what that means
         * (and now and then what no word shows: the barrier finished). */
        if ((atomic_load_explicit(&rw->futex, memory_order_relaxed) & ABAR__FUTEX_CANCELLED) ||
            i % 1024 == 0) {
            if (!pending_result(r = look(b, t, &s))) return r;
        }
        if (oversubscribed) sched_yield();
        else abar__pause();
        if (i % 64 == 0 || oversubscribed) {
            uint64_t now = abar__now_ns();
            if (t0 == 0) t0 = t1 = now;
            /* a jump since the last read: this thread's CPU was taken
             * (policy.c; yielding, a jump says nothing) */
            if (!oversubscribed && seen != 0) abar__spin_gap(now, now - seen);
            seen = now;
            if (now >= deadline) {
                r = look(b, t, &s); /* a verdict the futex word cannot show (finished) */
                return pending_result(r) ? ETIMEDOUT : r;
            }
            /* While sleepers of the last phase are still on their way back
             * from FUTEX_WAIT (a woken vCPU can take hundreds of µs to run
             * again, one after the other), they are whom we wait for:
             * parking now would make this phase as slow as a wake-up too,
             * and the next, for good.  The budget restarts until the last
             * is back, within a bound.  relaxed: a hint. */
            if (!soon && now - t0 < ABAR__WAKING_SPIN_NS &&
                atomic_load_explicit(&b->asleep[(t.raw - 1) & 1], memory_order_relaxed))
                t1 = now;
            /* Oversubscribed, park only once the others have each had a
             * turn too (4 yields per participant): with 4x more threads
             * than CPUs a phase can outlast the budget, and waiters that
             * park then make every later phase slower still (they must be
             * woken): all end up parked, at ten times the phase time.
             * Not in a stretch (phases stall anyway), nor past
             * ABAR__TURNS_NS (yields that return at once give no turns). */
            if (now - t1 >= budget &&
                (!oversubscribed || soon || now - t1 >= ABAR__TURNS_NS ||
                 i >= 4 * atomic_load_explicit(&b->expected, memory_order_relaxed))) {
                if (!(b->flags & ABAR_WAIT_SPIN)) return PARK;
                /* A spinner past its budget never parks, but lets the CPU go
                 * each round: the thread it waits for may need it. */
                oversubscribed = true;
            }
        }
    }
    return PARK;
}

/* Parks until phase t.raw completes: set PARKED while our phase is the
 * open one, then sleep on the futex word, which the completer (and
 * abar_cancel) change before they wake.  A phase whose release is being
 * published is only a moment from done: yield instead of parking (its
 * completer may have passed the point where it would see PARKED).  So is a
 * cancelled barrier that judge() did not call cancelled: its phase looked
 * complete, either truly (a completer will release it) or for a moment
 * (refused arrivals not yet undone; no one would wake us).  Returns as
 * spin does, never PARK. */
static int park(struct abar_impl *b, abar_token_t t, const struct timespec *abstime, uint64_t deadline)
{
    const bool pshared = b->flags & ABAR_PSHARED;
    struct abar__release *rw = rel(b);
    uint64_t s;
    int r;

    for (;;) {
        /* The futex word before the look: a completer that sees our PARKED,
         * or a cancel, changes it before waking, so the sleep below returns
         * at once if either came after this read.  acquire: pairs with their
         * release RMWs on it (a changed word means the state shows why). */
        const uint32_t v = atomic_load_explicit(&rw->futex, memory_order_acquire);
        if (!pending_result(r = look(b, t, &s))) return r;
        if (abstime && abar__now_ns() >= deadline) return ETIMEDOUT;
        if (r == EBUSY || (s & ST_CANCELLED)) {
            sched_yield();
            continue;
        }
        /* acq_rel: PARKED must be in the state word the completer's release
         * CAS replaces, so it sees it and wakes us (no lost wake-up).  The
         * first to park notes when, for the completer's abar__spin_learn. */
        if (!(s & ST_PARKED)) {
            abar__spin_parking(b);
            if (!atomic_compare_exchange_weak_explicit(&b->state, &s, s | ST_PARKED,
                                                       memory_order_acq_rel, memory_order_acquire))
                continue;
        }
        /* relaxed (both): a hint to the next phase's spinners */
        atomic_fetch_add_explicit(&b->asleep[t.raw & 1], 1, memory_order_relaxed);
        const uint64_t parked = b->flags & ABAR_WAIT_PARK ? 0 : abar__now_ns();
        int slept = abar__futex_wait(&rw->futex, v, pshared, abstime);
        atomic_fetch_sub_explicit(&b->asleep[t.raw & 1], 1, memory_order_relaxed);
        if (slept == ETIMEDOUT) {
            r = look(b, t, &s);
            return pending_result(r) ? ETIMEDOUT : r;
        }
        abar__spin_woken(b);
        /* how long after we parked the completer woke us (policy.c);
         * relaxed: a hint */
        if (parked)
            abar__spin_slept(parked, atomic_load_explicit(&b->woke_at, memory_order_relaxed), abar__now_ns());
    }
}

/* abar__block (wait.h): the first spin, the spin, the park. */
int abar__block(struct abar_impl *b, abar_token_t t, const struct timespec *abstime, bool leaned)
{
    if (!leaned && abstime == NULL && lean_spin(b, t)) return 0;
    const uint64_t deadline = abstime ? deadline_ns(abstime) : UINT64_MAX;
    const int r = spin(b, t, deadline);
    return r == PARK ? park(b, t, abstime, deadline) : r;
}

/* Registers as a blocked waiter, waits, and leaves. */
static int wait_registered(struct abar_impl *b, abar_token_t t, const struct timespec *abstime)
{
    bool counted;
    if (!abar__enter(b, &counted)) return EINVAL; /* destroyed: never sleep on it */
    int r = abar__block(b, t, abstime, false);
    abar__leave(b, counted);
    return r;
}

static int wait_common(abar_t *b, abar_token_t t, const struct timespec *abstime, int mode)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return EINVAL;
    if (t.id == 0) return abar__token_err(t); /* the error the arrival reported */
    if (t.id != bi->ident) return EINVAL;     /* another barrier's, or before a re-init */
    /* Completed already: decided on the release line alone.  acquire: pairs
     * with the completer's release store of phase. */
    const uint64_t done = atomic_load_explicit(&rel(bi)->phase, memory_order_acquire);
    if (t.raw < done) return 0;
    uint64_t s;
    if (mode == WAIT_TEST) {
        int r = look(bi, t, &s);
        return r == EDEADLK || pending_result(r) ? EBUSY : r; /* never blocks */
    }
    /* Rare: inside a completion (look for EDEADLK first), or a token past
     * the published phase (forged, of a phase no arrival has reached:
     * EINVAL at once, not after abar__block's first spin; or of the phase after
     * one being published: the look says pending). */
    if (abar__completing || t.raw > done) {
        int r = look(bi, t, &s);
        if (!pending_result(r)) return r;
    }
    /* abar__block judges the token again on its looks (cancelled...). */
    return wait_registered(bi, t, abstime);
}

int abar_wait(abar_t *b, abar_token_t t) { return wait_common(b, t, NULL, WAIT_BLOCK); }

int abar_test(abar_t *b, abar_token_t t) { return wait_common(b, t, NULL, WAIT_TEST); }

int abar_wait_until(abar_t *b, abar_token_t t, const struct timespec *abstime)
{
    if (abstime == NULL || abstime->tv_nsec < 0 || abstime->tv_nsec > 999999999) return EINVAL;
    return wait_common(b, t, abstime, WAIT_BLOCK);
}
