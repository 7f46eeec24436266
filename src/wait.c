/* wait.c - waiting for a phase: check, spin, park; and the calls built on it. */
#include "abar_internal.h"

#include <errno.h>
#include <sched.h>

enum { WAIT_BLOCK, WAIT_TEST };

/* What a token means against the current state: 0 its phase is complete,
 * EBUSY not yet, or the error a wait must return at once. */
static int judge(const struct abar_impl *b, abar_token_t t, uint64_t cur, uint64_t s)
{
    if (t.raw < cur) return 0;              /* a completed phase, however old */
    if (t.raw > cur) return EINVAL;         /* no arrive ever returned this: forged */
    if (s & ST_FINISHED) return ECANCELED;  /* a phase after the last drop */
    /* Cancelled: report it, unless the phase's last arrival was already
     * counted, in which case its release is imminent and the phase completes. */
    if ((s & ST_CANCELLED) && !st_completing(s)) return ECANCELED;
    if (abar__in_completion_of(b)) return EDEADLK; /* waiting on b from b's completion */
    return EBUSY;
}

/* Blocks until phase t.raw completes (registered in `inside` by the caller). */
static int block(struct abar_impl *b, abar_token_t t, const struct timespec *abstime)
{
    const bool pshared = b->flags & ABAR_PSHARED;
    const uint64_t want = phase_lo(t.raw);
    uint64_t s;
    int r;

    /* Spin first (bounded in time), unless told to park at once.  When more
     * threads wait than there are CPUs, spinning would steal the CPU from
     * the threads we wait for: then each round yields it instead. */
    uint64_t budget = b->flags & ABAR_WAIT_PARK ? 0 : abar__spin_ns();
    bool oversubscribed =
        atomic_load_explicit(&b->inside, memory_order_relaxed) > abar__ncpu();
    uint64_t deadline = abstime ? (uint64_t)abstime->tv_sec * 1000000000u + (uint64_t)abstime->tv_nsec
                                : UINT64_MAX;
    uint64_t t0 = 0; /* read lazily: most waits end before the first clock read */
    for (unsigned i = 1; budget || (b->flags & ABAR_WAIT_SPIN); i++) {
        /* acquire: pairs with the completer's release CAS; after it we see
         * every arrival's and the completion's writes. */
        s = atomic_load_explicit(&b->state, memory_order_acquire);
        /* The phase bits moved: phase t.raw is over (a full check settles the
         * rare cases: cancel, and a 2^21-phase wrap seen as "unchanged"). */
        if (st_phase(s) != want || (s & (ST_CANCELLED | ST_FINISHED)) || i % 1024 == 0) {
            uint64_t cur = abar__snapshot(b, &s);
            if ((r = judge(b, t, cur, s)) != EBUSY) return r;
        }
        if (oversubscribed) sched_yield();
        else abar__pause();
        if (i % 64 == 0 || oversubscribed) {
            uint64_t now = abar__now_ns();
            if (t0 == 0) t0 = now;
            if (now >= deadline) return ETIMEDOUT;
            if (now - t0 >= budget) {
                if (!(b->flags & ABAR_WAIT_SPIN)) break;
                /* A spinner past its budget never parks, but lets the CPU go
                 * each round: the thread it waits for may need it. */
                oversubscribed = true;
            }
        }
    }

    /* Park: set PARKED while the phase is still ours, then sleep on the futex
     * word, which the completer (and abar_cancel) change before they wake. */
    for (;;) {
        uint64_t cur = abar__snapshot(b, &s);
        if ((r = judge(b, t, cur, s)) != EBUSY) return r;
        if (abstime && abar__now_ns() >= deadline) return ETIMEDOUT;
        /* acquire/relaxed: PARKED must be in the state word the completer's
         * release CAS replaces, so it sees it and wakes us (no lost wake-up). */
        if (!(s & ST_PARKED) &&
            !atomic_compare_exchange_weak_explicit(&b->state, &s, s | ST_PARKED,
                                                   memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        if (abar__futex_wait(&b->futex, (uint32_t)t.raw, pshared, abstime) == ETIMEDOUT) {
            cur = abar__snapshot(b, &s);
            r = judge(b, t, cur, s);
            return r == EBUSY ? ETIMEDOUT : r;
        }
    }
}

static int wait_common(abar_t *b, abar_token_t t, const struct timespec *abstime, int mode)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return EINVAL;
    if (t.id == 0) return abar__token_err(t); /* the error the arrival reported */
    if (t.id != bi->ident) return EINVAL;   /* another barrier's, or before a re-init */
    uint64_t s, cur = abar__snapshot(bi, &s);
    int r = judge(bi, t, cur, s);
    if (r != EBUSY || mode == WAIT_TEST) return r;

    /* Register as a blocked waiter (destroy is EBUSY while we are inside),
     * then look again: the phase may have completed in between.
     * seq_cst: orders the registration with destroy's seq_cst read. */
    if (atomic_fetch_add(&bi->inside, 1) & ABAR__INSIDE_DEAD) {
        r = EINVAL; /* destroyed before it could see us: never sleep on it */
    } else {
        cur = abar__snapshot(bi, &s);
        r = judge(bi, t, cur, s);
        if (r == EBUSY) r = block(bi, t, abstime);
    }
    /* release: our last access to the barrier; a destroy that reads 0 here
     * (acquire) runs after it. */
    atomic_fetch_sub_explicit(&bi->inside, 1, memory_order_release);
    return r;
}

int abar_wait(abar_t *b, abar_token_t t) { return wait_common(b, t, NULL, WAIT_BLOCK); }

int abar_test(abar_t *b, abar_token_t t) { return wait_common(b, t, NULL, WAIT_TEST); }

int abar_wait_until(abar_t *b, abar_token_t t, const struct timespec *abstime)
{
    if (abstime == NULL || abstime->tv_nsec < 0 || abstime->tv_nsec > 999999999 ||
        abstime->tv_sec < 0)
        return EINVAL;
    return wait_common(b, t, abstime, WAIT_BLOCK);
}

abar_token_t abar_current(abar_t *b)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return tok_error(EINVAL);
    uint64_t s;
    uint64_t cur = abar__snapshot(bi, &s);
    if (s & ST_CANCELLED && !st_completing(s)) return tok_error(ECANCELED);
    return tok_make(cur, bi->ident);
}

int abar_arrive_and_wait(abar_t *b)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return EINVAL;
    /* Register before arriving: once our arrival is counted the phase can
     * complete and a released thread may try to destroy the barrier; it must
     * see us inside.  seq_cst: as in wait_common. */
    abar_token_t t = atomic_fetch_add(&bi->inside, 1) & ABAR__INSIDE_DEAD ? tok_error(EINVAL)
                                                                          : abar_arrive(b);
    int r = t.id == 0 ? abar__token_err(t) : 0;
    if (r == 0) r = block(bi, t, NULL); /* returns at once if we completed the phase */
    atomic_fetch_sub_explicit(&bi->inside, 1, memory_order_release);
    return r;
}
