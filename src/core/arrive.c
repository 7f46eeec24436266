/* arrive.c - counting arrivals, and completing a phase. */
#include "abar_internal.h"

#include <errno.h>

ABAR__TLS const struct abar__frame *abar__completing;

/* The cases of a pair's single arrival that abar__ticket_add (abar_internal.h)
 * leaves here, from the state s it found: a flag, drops, a phase being
 * completed the general way, or a state naming another phase than
 * `before` (the `phase` word it read first).  One CAS from a state it has
 * judged, as there: refused arrivals change nothing.  The caller is
 * registered, so the barrier is alive after the CAS. */
abar_token_t abar__ticket_slow(struct abar_impl *b, uint64_t before, uint64_t s, uint64_t ident,
                               bool *last)
{
    (void)before; /* the phase is read again after the CAS (below) */
    uint64_t ns;
    for (;;) {
        if (s & (ST_CANCELLED | ST_FINISHED)) return tok_cancelled();
        /* 0 pending: a phase whose drop made it complete the general way is
         * running abar__complete; no arrival can count until it reopens. */
        if (st_pending(s) < 1) return tok_error(EINVAL);
        const uint64_t base = s & ~((ST_PHASE_MASK << ST_PHASE_SHIFT) | ST_PARKED);
        if (base == (ST_PENDING_BIAS + 2) || base == (ST_PENDING_BIAS + 2 + ST_HALF))
            ns = s + ST_HALF; /* the first of two, or the carry (PARKED kept) */
        else if (base == ST_PENDING_BIAS + 1)
            ns = s + (UINT64_C(1) << ST_PHASE_SHIFT); /* a barrier of one: the carry */
        else
            ns = s - 1; /* drops in this phase: counted the general way */
        /* An arrival that completes phase S (it carries, or takes pending
         * to 0) does so only once S-1 is published, as abar__complete
         * opens S+1 only then: so `phase` is always S-1 or S, and the
         * completer can tell S from its low bits (owned_phase).  relaxed:
         * the CAS below orders; this only waits for a moment (the previous
         * carrier's store). */
        if ((st_phase(ns) != st_phase(s) || st_pending(ns) == 0) &&
            st_phase(s) != phase_lo(atomic_load_explicit(&b->pair.phase, memory_order_relaxed))) {
            abar__pause();
            s = atomic_load_explicit(&b->state, memory_order_relaxed);
            continue;
        }
        /* acq_rel: as abar__ticket_add's CAS */
        if (atomic_compare_exchange_weak_explicit(&b->state, &s, ns, memory_order_acq_rel,
                                                  memory_order_relaxed))
            break;
    }
    if (st_phase(ns) != st_phase(s)) { /* we carried: release the phase we completed */
        *last = true;
        return tok_make(abar__ticket_release_wrapped(b, s), ident);
    }
    if (st_pending(ns) == 0) { /* pending 1 without the carry (drops): complete */
        *last = true;
        return tok_make(abar__complete(b, ns), ident);
    }
    /* relaxed: only the value matters */
    return tok_make(abar__bracket_phase(st_phase(s), atomic_load_explicit(&b->pair.phase,
                                                                          memory_order_relaxed)),
                    ident);
}

/* The phase a completer owns, from the state its RMW left (pending 0, the
 * phase bits still its phase S): `phase` is S-1 (the previous release not
 * yet published) or S, so the low bits pick S exactly. */
static inline uint64_t owned_phase(struct abar_impl *b, uint64_t s)
{
    /* relaxed: the value only; abar__complete acquires before it publishes */
    const uint64_t cur = atomic_load_explicit(&rel(b)->phase, memory_order_relaxed);
    return st_phase(s) == phase_lo(cur) ? cur : cur + 1;
}

/* The carry of a pair (abar__ticket_add, abar__ticket_slow) completed the
 * phase S that the state s it replaced names, and opened S+1: release S,
 * in order.  Returns S. */
uint64_t abar__ticket_release_wrapped(struct abar_impl *b, uint64_t s)
{
    const uint64_t p = owned_phase(b, s);
    /* The previous carrier may not have published p yet.  acquire: its
     * release, and so every write before it. */
    while (atomic_load_explicit(&b->pair.phase, memory_order_acquire) != p) abar__pause();
    /* The carry kept the PARKED that a parker of phase p set: clear it
     * before the release changes the futex word (a parker that set it
     * since, in the new phase, read the word before and so cannot sleep
     * through that change).  relaxed: part of the release sequence on
     * `state`; the futex CAS in publish releases. */
    if (s & ST_PARKED) atomic_fetch_and_explicit(&b->state, ~ST_PARKED, memory_order_relaxed);
    abar__publish(b, p, s & ST_PARKED);
    return p;
}

/* Counts n arrivals (one of them a drop if `drop`) in the current phase;
 * *last says whether they completed it (this thread ran the completion).
 * The caller is registered (abar__enter): the barrier stays alive after
 * our RMW, so the phase is read again after it (abar__bracket_phase). */
static inline abar_token_t arrive_live(struct abar_impl *bi, uint32_t n, bool drop, bool *last)
{
    *last = false;
    if (n == 0 || n > ABAR_EXPECTED_MAX) return tok_error(EINVAL);
    if (bi->leaves) /* a wide barrier: its leaves count (tree.c) */
        return n == 1 ? abar__tree_arrive1(bi, drop, last) : abar__tree_arrive_n(bi, n, last);
    const uint64_t ident = bi->ident;
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
        for (;;) {
            if (s & (ST_CANCELLED | ST_FINISHED)) return tok_cancelled();
            /* More than the phase still expects (or its completion is running):
             * refused whole, nothing counted. */
            if ((int32_t)n > st_pending(s)) return tok_error(EINVAL);
            /* (a pair's HALF is one arrival already: st_pending counts it) */
            ns = s - n + (drop ? ST_DROP_ONE : 0);
            /* A pair's phase that these complete, with no drop: open the
             * next with the same count in this CAS, as the pair's carry
             * does (so a pair refuses no arrival but after drops), once
             * the previous release is published (abar__ticket_slow). */
            if ((bi->flags & ABAR__TICKET) && !drop && st_pending(ns) == 0 &&
                !(s & (ST_HALF | ST_DROP_MASK))) {
                if (st_phase(s) != phase_lo(atomic_load_explicit(&bi->pair.phase, memory_order_relaxed))) {
                    abar__pause();
                    s = atomic_load_explicit(&bi->state, memory_order_relaxed);
                    continue; /* judge the new state from the start */
                }
                ns = s + (UINT64_C(1) << ST_PHASE_SHIFT);
            }
            /* acq_rel: as above */
            if (atomic_compare_exchange_weak_explicit(&bi->state, &s, ns, memory_order_acq_rel,
                                                      memory_order_relaxed))
                break;
        }
    }
    if (st_phase(ns) != st_phase(s)) { /* a pair's phase, completed and the next opened */
        *last = true;
        return tok_make(abar__ticket_release_wrapped(bi, s), ident);
    }
    if (st_pending(ns) == 0) { /* the completer: it owns the phase */
        *last = true;
        return tok_make(abar__complete(bi, ns), ident);
    }
    /* relaxed: only the value matters */
    return tok_make(abar__bracket_phase(st_phase(s), atomic_load_explicit(&rel(bi)->phase,
                                                                           memory_order_relaxed)),
                    ident);
}

/* An arrival from a thread not otherwise registered: registered for its
 * length (abar__enter), so that it may read the barrier after its RMW. */
ABAR__TLS struct abar__reg *abar__arrival_reg;

void abar__arrival_unregister(struct abar_impl *b)
{
    struct abar__reg *g = abar__arrival_reg;
    g->open = false;
    abar__leave(b, g->counted);
}

static abar_token_t arrive(abar_t *b, uint32_t n, bool drop, bool *last)
{
    struct abar_impl *bi = abar__live(b);
    *last = false;
    struct abar__reg reg = { bi, false, true };
    if (bi == NULL || !abar__enter(bi, &reg.counted)) return tok_error(EINVAL);
    /* A completion may arrive on other barriers, nested: keep theirs apart */
    struct abar__reg *const outer = abar__arrival_reg;
    abar__arrival_reg = &reg;
    const abar_token_t t = arrive_live(bi, n, drop, last);
    abar__arrival_reg = outer;
    if (reg.open) abar__leave(bi, reg.counted); /* not given up by a release */
    return t;
}

abar_token_t abar__arrive1(struct abar_impl *bi, bool *last) { return arrive_live(bi, 1, false, last); }

/* The last arrival of its phase (s: the state its RMW left, pending 0):
 * run the completion, reset, advance, release; returns the phase p.
 * Until the release no arrival can be counted (pending is 0), so the fields
 * below are ours alone.  The release is two steps: the CAS on `state` opens
 * phase p+1 to arrivals; the store to `phase` then releases the waiters.
 * After that store this function must not touch the barrier: a released
 * waiter may destroy and free it at once (the futex wake uses only the
 * address). */
uint64_t abar__complete(struct abar_impl *b, uint64_t s)
{
    const uint64_t p = owned_phase(b, s);
    struct abar__release *r = rel(b);
    /* The previous completer may not have published phase p yet (it opened
     * this phase to arrivals first): publish in order, and let the
     * completion see abar_phase at p.  Keeps phase ∈ {S-1, S}.  acquire:
     * its release, and so every earlier phase's writes. */
    while (atomic_load_explicit(&r->phase, memory_order_acquire) != p) abar__pause();
    /* A phase whose last arrival was counted completes even if abar_cancel
     * runs meanwhile: the cancel is ordered after that arrival. */
    if (b->completion) {
        struct abar__frame frame = { b, abar__completing };
        abar__completing = &frame; /* waiting on b from inside returns EDEADLK */
        b->completion(b->arg);
        abar__completing = frame.outer;
    }
    /* relaxed: `expected` is read and written only by completers, which are
     * ordered one after the other by the release/acquire chain on `state`. */
    uint32_t next = atomic_load_explicit(&b->expected, memory_order_relaxed) - st_drops(s);
    if (st_drops(s)) atomic_store_explicit(&b->expected, next, memory_order_relaxed);
    uint64_t cur = atomic_load_explicit(&b->state, memory_order_relaxed);
    const uint64_t fin = next == 0 ? ST_FINISHED : 0;
    /* Open phase p+1 to arrivals.  PARKED and CANCELLED may change under us,
     * and refused arrivals may have subtracted and not yet taken it back:
     * wait for their undo (pending back at exactly 0), keep CANCELLED,
     * clear PARKED (we wake the parked below).  release: the next completer
     * acquires the completion's writes through the arrivals' RMWs. */
    for (;;) {
        if (st_pending(cur) != 0) {
            abar__pause();
            cur = atomic_load_explicit(&b->state, memory_order_relaxed);
        } else if (atomic_compare_exchange_weak_explicit(
                       &b->state, &cur, st_make(p + 1, next, (cur & ST_CANCELLED) | fin),
                       memory_order_release, memory_order_relaxed)) {
            break;
        }
    }
    abar__publish(b, p, cur & ST_PARKED);
    return p;
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
    /* The hint abar__block reads: written only when it changes (it shares the
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
    abar__before_release(b);
    atomic_store_explicit(&r->phase, p + 1, memory_order_release);
    if (parked) abar__futex_wake_all(&r->futex, pshared);
}

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
