/* arrive.c - counting arrivals, and completing a phase. */
#include "abar_internal.h"

#include <errno.h>

ABAR__TLS const struct abar__frame *abar__completing;

/* The full phase of an arrival whose RMW saw state s, from the `phase` word
 * read just BEFORE the RMW (after it, a thread whose arrival did not complete
 * the phase may not touch the barrier: the phase may complete and a released
 * waiter free the memory).  phase ∈ {S-1, S} held at the RMW, and the read
 * came earlier, so the phase is the first at or after it with s's low bits;
 * exact unless 2^ST_PHASE_BITS phases completed between the read and the RMW. */
static inline uint64_t arrival_phase(uint64_t before, uint64_t s)
{
    return before + phase_lo(st_phase(s) - before);
}

/* The cases of a pair's single arrival that abar__ticket_add (abar_internal.h)
 * leaves to this function: its add (which found s) counts nothing, or
 * completes a phase that expects one, or carries over a PARKED flag.
 *
 * Refused: the add is taken back when its result shows it should not have
 * counted: cancelled or finished, nothing left to count, or a phase other
 * than `before`.  The last keeps refused adds harmless: one that lands
 * while a phase completes (pending 0 with HALF set) carries the phase bits
 * forward until it is taken back, and an add that reads that transient sees
 * a phase no participant can be arriving in (a participant arrives in
 * phase q only once it has seen q published, and q cannot end without it),
 * so it is refused too. */
abar_token_t abar__ticket_slow(struct abar_impl *b, uint64_t before, uint64_t s, uint64_t ident,
                               bool *last)
{
    if ((s & (ST_CANCELLED | ST_FINISHED)) || st_pending(s) < 1 || st_phase(s) != phase_lo(before)) {
        /* relaxed: a completer waits for the state to read exactly its
         * phase with nothing pending before it resets (abar__complete). */
        atomic_fetch_sub_explicit(&b->state, ST_HALF, memory_order_relaxed);
        return tok_error(s & (ST_CANCELLED | ST_FINISHED) ? ECANCELED : EINVAL);
    }
    if (st_pending(s) != 1) return tok_make(before, ident); /* the first of two */
    *last = true;
    uint64_t carried = s; /* the state the carry into phase before+1 found */
    if (s == st_make(before, 1, 0)) {
        /* A phase that expects one, no flag, no drop (a barrier of one): we
         * took pending to 0 with HALF set, and a second add carries, opening
         * the next phase with the same count, as a pair's second arrival
         * does.  Refused adds meanwhile each add HALF and take it back,
         * which commutes with ours (and their carry is refused by the phase
         * check).  release: as abar__complete's CAS. */
        carried = atomic_fetch_add_explicit(&b->state, ST_HALF, memory_order_release);
    } else if (!(s & ST_HALF)) {
        /* pending was 1 without HALF (a phase whose other arrival dropped,
         * or with a flag): we took it to 0, a completer's state. */
        abar__complete(b, before, s + ST_HALF);
        return tok_make(before, ident);
    }
    /* The carry opened phase before+1, and kept the PARKED that a parker of
     * this phase set: clear it before the release changes the futex word (a
     * parker that set it since, in the new phase, read the word before and
     * so cannot sleep through that change).  relaxed: part of the release
     * sequence on `state`; the futex CAS in publish releases. */
    if (carried & ST_PARKED) atomic_fetch_and_explicit(&b->state, ~ST_PARKED, memory_order_relaxed);
    abar__publish(b, before, carried & ST_PARKED);
    return tok_make(before, ident);
}

/* Counts n arrivals (one of them a drop if `drop`) in the current phase;
 * *last says whether they completed it (this thread ran the completion). */
static inline abar_token_t arrive_live(struct abar_impl *bi, uint32_t n, bool drop, bool *last)
{
    *last = false;
    if (n == 0 || n > ABAR_EXPECTED_MAX) return tok_error(EINVAL);
    if (bi->leaves) /* a wide barrier: its leaves count (tree.c) */
        return n == 1 ? abar__tree_arrive1(bi, drop, last) : abar__tree_arrive_n(bi, n, last);
    const uint64_t ident = bi->ident; /* read now: after our RMW we may not touch bi */
    /* acquire: pairs with the completers' release stores of phase */
    const uint64_t before = atomic_load_explicit(&rel(bi)->phase, memory_order_acquire);
    uint64_t s, ns;
    if (n == 1 && !drop) {
        if (bi->flags & ABAR__TICKET) return abar__ticket_arrive(bi, last);
        /* The common case: one atomic subtraction counts the arrival.
         * acq_rel: release publishes this thread's writes to whoever completes
         * the phase (all arrivals form one release sequence on `state`);
         * acquire gives the completing arrival every earlier arrival's writes. */
        s = atomic_fetch_sub_explicit(&bi->state, 1, memory_order_acq_rel);
        ns = s - 1;
        if ((s & (ST_CANCELLED | ST_FINISHED)) || st_pending(s) < 1) {
            /* Not countable: take it back.  The phase's count is truly 0 (or
             * the barrier is cancelled), so the transient hides no arrival;
             * a completer waits for this undo before it resets. */
            atomic_fetch_add_explicit(&bi->state, 1, memory_order_relaxed);
            return tok_error(s & (ST_CANCELLED | ST_FINISHED) ? ECANCELED : EINVAL);
        }
    } else {
        s = atomic_load_explicit(&bi->state, memory_order_relaxed);
        do {
            if (s & (ST_CANCELLED | ST_FINISHED)) return tok_error(ECANCELED);
            /* More than the phase still expects (or its completion is running):
             * refused whole, nothing counted. */
            if ((int32_t)n > st_pending(s)) return tok_error(EINVAL);
            /* A pair's refused adds may carry the phase bits forward for a
             * moment: count nothing in a phase other than `before` (as
             * abar__ticket_slow, whose argument this is). */
            if ((bi->flags & ABAR__TICKET) && st_phase(s) != phase_lo(before)) return tok_error(EINVAL);
            ns = s - n + (drop ? ST_DROP_ONE : 0);
            /* acq_rel: as above */
        } while (!atomic_compare_exchange_weak_explicit(&bi->state, &s, ns, memory_order_acq_rel,
                                                        memory_order_relaxed));
    }
    uint64_t p = arrival_phase(before, s);
    if (st_pending(ns) == 0) { /* the completer may: it owns the phase */
        abar__complete(bi, p, ns);
        *last = true;
    }
    return tok_make(p, ident);
}

static abar_token_t arrive(abar_t *b, uint32_t n, bool drop, bool *last)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) {
        *last = false;
        return tok_error(EINVAL);
    }
    return arrive_live(bi, n, drop, last);
}

abar_token_t abar__arrive1(struct abar_impl *bi, bool *last) { return arrive_live(bi, 1, false, last); }

/* The last arrival of phase p: run the completion, reset, advance, release.
 * Until the release no arrival can be counted (pending is 0), so the fields
 * below are ours alone.  The release is two steps: the CAS on `state` opens
 * phase p+1 to arrivals; the store to `phase` then releases the waiters.
 * After that store this function must not touch the barrier: a released
 * waiter may destroy and free it at once (the futex wake uses only the
 * address). */
void abar__complete(struct abar_impl *b, uint64_t p, uint64_t s)
{
    /* A phase whose last arrival was counted completes even if abar_cancel
     * runs meanwhile: the cancel is ordered after that arrival. */
    if (b->completion) {
        struct abar__frame frame = { b, abar__completing };
        abar__completing = &frame; /* waiting on b from inside returns EDEADLK */
        b->completion(b->arg);
        abar__completing = frame.outer;
    }
    struct abar__release *r = rel(b);
    /* relaxed: `expected` is read and written only by completers, which are
     * ordered one after the other by the release/acquire chain on `state`. */
    uint32_t next = atomic_load_explicit(&b->expected, memory_order_relaxed) - st_drops(s);
    if (st_drops(s)) atomic_store_explicit(&b->expected, next, memory_order_relaxed);
    /* The previous completer may not have published phase p yet (it opened
     * this phase to arrivals first): publish in order.  Keeps phase ∈ {S-1, S}. */
    while (atomic_load_explicit(&r->phase, memory_order_acquire) != p) abar__pause();
    uint64_t cur = atomic_load_explicit(&b->state, memory_order_relaxed);
    const uint64_t fin = next == 0 ? ST_FINISHED : 0;
    /* Open phase p+1 to arrivals.  PARKED and CANCELLED may change under us,
     * and refused arrivals may have subtracted (or a pair's, added HALF)
     * and not yet taken it back: wait for their undo (pending back at
     * exactly 0, the phase bits back at p), keep CANCELLED, clear PARKED (we
     * wake the parked below).  release: the next completer acquires the
     * completion's writes through the arrivals' RMWs. */
    for (;;) {
        if (st_pending(cur) != 0 || st_phase(cur) != phase_lo(p)) {
            abar__pause();
            cur = atomic_load_explicit(&b->state, memory_order_relaxed);
        } else if (atomic_compare_exchange_weak_explicit(
                       &b->state, &cur, st_make(p + 1, next, (cur & ST_CANCELLED) | fin),
                       memory_order_release, memory_order_relaxed)) {
            break;
        }
    }
    abar__publish(b, p, cur & ST_PARKED);
}

/* Releases the waiters of phase p, after the release CAS on `state` (which
 * found PARKED if `parked`).  Sleepers (that CAS cleared PARKED) need the
 * futex word changed before the wake: a sleeper read it before it looked at
 * the state, and its FUTEX_WAIT must not block on the value it read.  Only
 * the count bits change (bit 31 is a cancel's), by CAS: a cancel may set
 * its bit meanwhile.  Spinners watch `phase`, the count of completed
 * phases: it is the last thing written, so a waiter that sees it move may
 * return and free the barrier at once (the wake uses only the address).
 * release (both): the completion's and every arrival's writes (acquired by
 * the caller) reach a waiter that acquires either word. */
void abar__publish(struct abar_impl *b, uint64_t p, bool parked)
{
    const bool pshared = b->flags & ABAR_PSHARED;
    struct abar__release *r = rel(b);
    /* The hint block() reads: written only when it changes (it shares the
     * line every call reads).  relaxed: a hint, ordered with nothing. */
    if (atomic_load_explicit(&b->slept, memory_order_relaxed) != parked)
        atomic_store_explicit(&b->slept, parked, memory_order_relaxed);
    if (parked) {
        abar__spin_learn(b); /* before the release: b may be freed after it */
        uint32_t f = atomic_load_explicit(&r->futex, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(
            &r->futex, &f, (f & ABAR__FUTEX_CANCELLED) | ((f + 1) & ~ABAR__FUTEX_CANCELLED),
            memory_order_release, memory_order_relaxed)) {}
    }
    atomic_store_explicit(&r->phase, p + 1, memory_order_release);
    if (parked) abar__futex_wake_all(&r->futex, pshared);
}

abar_token_t abar__arrive_last(abar_t *b, bool *last) { return arrive(b, 1, false, last); }

abar_token_t abar_arrive(abar_t *b)
{
    bool last;
    return arrive(b, 1, false, &last);
}

abar_token_t abar_arrive_n(abar_t *b, uint32_t n)
{
    bool last;
    return arrive(b, n, false, &last);
}

int abar_arrive_and_drop(abar_t *b)
{
    bool last;
    return abar_token_error(arrive(b, 1, true, &last));
}
