/* arrive_wait.c - abar_arrive_and_wait: an arrival and its wait in one
 * call, with the pair's path (T = 2) inline and the barrier of one's. */
#include "wait.h"

#include <errno.h>

/* The rest of pair_arrive_and_wait's wait, out of line: abar__block from
 * where the first spin left off, then the slot back. */
static __attribute__((noinline)) int pair_block(struct abar_impl *bi, abar_token_t t,
                                                struct abar__hazard *h, unsigned d)
{
    const int r = abar__block(bi, t, NULL, true);
    slot_pop(h, d);
    return r;
}

/* pair_arrive_and_wait's arrival when it was neither of the two usual ones
 * (abar__ticket_slow decides), and the wait, out of line, as in
 * arrive_and_wait. */
static __attribute__((noinline)) int pair_slow(struct abar_impl *bi, uint64_t before, uint64_t s,
                                               struct abar__hazard *h, unsigned d, bool *lastp)
{
    bool last = false; /* abar__ticket_slow says only when it completed the phase */
    const abar_token_t t = abar__ticket_slow(bi, before, s, bi->ident, &last);
    if (lastp) *lastp = last;
    int r;
    if (t.id == 0) r = abar__token_err(t);
    else if (last || released(rel(bi), t) || lean_spin(bi, t)) r = 0;
    else r = abar__block(bi, t, NULL, true);
    slot_pop(h, d);
    return r;
}

static int arrive_and_wait_general(abar_t *b, bool *last);

/* abar_arrive_and_wait on a private pair without a completion function
 * (ABAR__TICKET): the T = 2 critical path, from a waiter seeing its
 * release to its next add (docs/lab/where-time-goes.md), with no call and no frame in
 * its usual course: the hazard slot (as abar__enter), the pair's add, the
 * first spin, the slot cleared (as abar__leave); a barrier of one took
 * abar__one_carry's CAS before (arrive_and_wait_any).  Every other course is a tail call: the general path, having
 * touched nothing, where there is no hazard record yet or its slots are
 * full, waiters are told to park, the machine is oversubscribed (or not
 * yet counted), or a destroy has marked the barrier.  `last`, if not NULL,
 * says whether this thread's arrival completed the phase. */
static inline __attribute__((always_inline)) int pair_arrive_and_wait(abar_t *b, struct abar_impl *bi,
                                                                      bool *last)
{
    struct abar__hazard *const h = abar__hazard_self;
    /* relaxed: written at init, and by a completer when drops change it */
    if (h == NULL || h->depth >= ABAR__HAZARD_DEPTH || (bi->flags & ABAR_WAIT_PARK) ||
        atomic_load_explicit(&bi->expected, memory_order_relaxed) >
            atomic_load_explicit(&abar__ncpu_cache, memory_order_relaxed))
        return arrive_and_wait_general(b, last);
    const unsigned d = slot_push(h, bi);
    if (atomic_load(&bi->inside) & ABAR__INSIDE_DEAD) { /* as abar__enter: seq_cst */
        slot_pop(h, d);
        return arrive_and_wait_general(b, last); /* it waits for the destroy's verdict */
    }
    uint64_t before, s;
    abar__prefetch_pair_add(bi);
    const int k = abar__ticket_add(bi, &before, &s);
    if (last) *last = k == ABAR__TICKET_CARRIED;
    if (k == ABAR__TICKET_FIRST) {
        /* lean_spin's rounds on the pair's release word, looked at first (the
         * release may have come while we added) */
        const abar_token_t t = tok_make(abar__ticket_first_phase(bi, before, s), bi->ident);
        if (!first_polls(&bi->pair, t)) return pair_block(bi, t, h, d);
        abar__spin_lean_waited(bi, t.raw);
        slot_pop(h, d);
        return 0;
    }
    if (k == ABAR__TICKET_OTHER) return pair_slow(bi, before, s, h, d, last);
    slot_pop(h, d); /* we carried the phase: nothing to wait for */
    return 0;
}

static inline __attribute__((always_inline)) int arrive_and_wait(abar_t *b, bool *last)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return EINVAL;
    /* Register before arriving: once our arrival is counted the phase can
     * complete and a released thread may try to destroy the barrier; it must
     * see us. */
    /* From inside its own completion: an arrival there would be refused
     * (the phase is completing), and the wait is the deadlock wait()
     * reports (EDEADLK), so report that, counting nothing. */
    if (__builtin_expect(abar__completing != NULL, 0) && abar__in_completion_of(bi)) return EDEADLK;
    bool counted;
    if (!abar__enter(bi, &counted)) return EINVAL;
    /* A pair without a completion function: its arrival inline (the
     * critical path at T = 2 runs from a waiter seeing its release to its
     * next arrival).  abar_arrive_and_wait takes pair_arrive_and_wait for
     * these; this is for the cases it leaves here. */
    abar_token_t t = bi->flags & ABAR__TICKET ? abar__ticket_arrive(bi, last) : abar__arrive1(bi, last);
    int r;
    if (t.id == 0) r = abar__token_err(t);
    else if (*last) r = 0; /* we completed the phase: nothing to wait for */
    /* released while we arrived (acquire: pairs with the completer's
     * release store of phase), else spin and park */
    else if (atomic_load_explicit(&rel(bi)->phase, memory_order_acquire) > t.raw) r = 0;
    else if (lean_spin(bi, t)) r = 0; /* inline: its exit is on the critical path */
    else r = abar__block(bi, t, NULL, true);
    abar__leave(bi, counted);
    return r;
}

/* The general path of abar_arrive_and_wait, out of line, so that the
 * pair's path needs no frame (last may be NULL). */
static __attribute__((noinline)) int arrive_and_wait_general(abar_t *b, bool *last)
{
    bool dummy;
    return arrive_and_wait(b, last ? last : &dummy);
}

static inline __attribute__((always_inline)) int arrive_and_wait_any(abar_t *b, bool *last)
{
    struct abar_impl *bi = abar__live(b);
    if (bi && (bi->flags & (ABAR__TICKET | ABAR_PSHARED)) == ABAR__TICKET) {
        /* T = 1: one CAS, unregistered (a destroy that said 0 set FINISHED
         * in `state` last, so the CAS fails after it), before the pair's
         * hazard and policy loads.  relaxed: expected changes at init and
         * by a completer when drops change it. */
        if (atomic_load_explicit(&bi->expected, memory_order_relaxed) == 1 && abar__one_carry(bi)) {
            if (last) *last = true;
            return 0;
        }
        return pair_arrive_and_wait(b, bi, last);
    }
    return arrive_and_wait_general(b, last);
}

int abar_arrive_and_wait(abar_t *b) { return arrive_and_wait_any(b, NULL); }
