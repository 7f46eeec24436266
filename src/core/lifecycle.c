/* lifecycle.c - init, destroy, cancel, and the read-only inspectors. */
#define _GNU_SOURCE
#include "abar_internal.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define KNOWN_FLAGS (ABAR_PSHARED | ABAR_WAIT_SPIN | ABAR_WAIT_PARK)

/* A fresh identity for every init, so tokens of another barrier, or of this
 * memory before a destroy and re-init, are told apart.  Within a process the
 * identities are distinct by construction: a counter, offset by a per-process
 * seed (pid, clock, address; new after fork), through splitmix64's finaliser,
 * a bijection.  Across processes (shared barriers) and for forged tokens a
 * collision has probability 2^-64.  Never 0 (0 marks an invalid token). */
static _Atomic uint64_t ident_seed; /* 0: not yet drawn in this process */

static void ident_forked(void) { atomic_store_explicit(&ident_seed, 0, memory_order_relaxed); }

__attribute__((constructor)) static void ident_setup(void) { pthread_atfork(NULL, NULL, ident_forked); }

static uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static uint64_t new_ident(const void *addr)
{
    static _Atomic uint64_t counter;
    /* relaxed: only the values matter (a racy first draw of the seed by two
     * threads picks one of two seeds; the counter still keeps them apart) */
    uint64_t seed = atomic_load_explicit(&ident_seed, memory_order_relaxed);
    if (seed == 0) {
        seed = mix64((uint64_t)getpid() << 32 ^ abar__now_ns() ^ (uint64_t)(uintptr_t)addr) | 1;
        atomic_store_explicit(&ident_seed, seed, memory_order_relaxed);
    }
    uint64_t x = mix64(seed + 0x9e3779b97f4a7c15u * atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed));
    return x ? x : 1;
}

int abar_init(abar_t *b, uint32_t expected, const abar_attr_t *attr)
{
    if (b == NULL || expected == 0 || expected > ABAR_EXPECTED_MAX) return EINVAL;
    unsigned flags = attr ? attr->flags : 0;
    if (flags & ~KNOWN_FLAGS) return EINVAL;
    if ((flags & ABAR_WAIT_SPIN) && (flags & ABAR_WAIT_PARK)) return EINVAL;

    struct abar_impl *bi = impl(b);
    /* A live barrier with blocked waiters or a running completion is in use. */
    if (atomic_load_explicit(&bi->magic, memory_order_acquire) == ABAR__MAGIC_LIVE) {
        uint64_t s = atomic_load_explicit(&bi->state, memory_order_acquire);
        if ((atomic_load_explicit(&bi->inside, memory_order_acquire) & ~ABAR__INSIDE_DEAD) != 0 ||
            st_completing(s) || (!(bi->flags & ABAR_PSHARED) && abar__hazard_any(bi)))
            return EBUSY;
        abar__tree_free(bi); /* re-initialised without a destroy */
    }
    memset(b, 0, sizeof *b);
    bi->completion = attr ? attr->completion : NULL;
    bi->flags = flags | (expected <= ABAR__PAIR_MAX ? ABAR__PAIR : 0);
    if ((bi->flags & ABAR__PAIR) && bi->completion == NULL) bi->flags |= ABAR__TICKET;
    bi->arg = attr ? attr->arg : NULL;
    bi->ident = new_ident(b);
    atomic_init(&bi->expected, expected);
    atomic_init(&bi->state, st_make(0, expected, 0));
    atomic_init(&bi->pair.phase, 0);
    atomic_init(&bi->pair.futex, 0);
    atomic_init(&bi->wide.phase, 0);
    atomic_init(&bi->wide.futex, 0);
    atomic_init(&bi->inside, 0);
    abar__tree_setup(bi, expected);
    /* release: a thread that sees the magic sees the initialised fields
     * (handing the barrier to other threads still needs the caller's own
     * synchronisation, as for any object). */
    atomic_store_explicit(&bi->magic, ABAR__MAGIC_LIVE, memory_order_release);
    return 0;
}

int abar_destroy(abar_t *b)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return EINVAL;
    /* Busy at a glance (a completion running, a release not yet published):
     * EBUSY without the fences below.  Only a shortcut: the verdict is the
     * look after them. */
    uint64_t st = atomic_load(&bi->state);
    if (st_completing(st) || st_phase(st) != phase_lo(atomic_load(&rel(bi)->phase))) return EBUSY;
    /* One RMW on `inside` decides against every registering caller (theirs
     * is an RMW too, or a hazard slot: below): either one is counted here
     * (EBUSY) or it sees DEAD and waits for our verdict. */
    uint32_t none = 0;
    if (!atomic_compare_exchange_strong(&bi->inside, &none, ABAR__INSIDE_DEAD)) return EBUSY;
    bool busy = false;
    if (!(bi->flags & ABAR_PSHARED)) {
        /* Our mark, then the callers' slots (abar__enter): the heavy half
         * of the fence pair (hazard.c). */
        abar__hazard_fence_heavy();
        busy = abar__hazard_any(bi);
    }
    /* Then the state, judged only now: a completer leaves its registration
     * (a release) after its RMW on `state` and before its release store of
     * `phase`, so a completer we did not see registered shows here as a
     * state naming a phase not yet published (or a completion running).
     * seq_cst loads, after the slots' and `inside`'s. */
    st = atomic_load(&bi->state);
    if (busy || st_completing(st) || st_phase(st) != phase_lo(atomic_load(&rel(bi)->phase))) {
        atomic_fetch_and(&bi->inside, ~ABAR__INSIDE_DEAD); /* in use: as we were */
        return EBUSY;
    }
    /* A cancel still between its two flags (abar_cancel) is about to write
     * the futex word: let it finish first.  acquire: pairs with its release. */
    if (st & ST_CANCELLED)
        while (!(atomic_load_explicit(&rel(bi)->futex, memory_order_acquire) & ABAR__FUTEX_CANCELLED))
            abar__pause();
    /* Last, the state itself, from the value judged: FINISHED (refused by
     * every arrival).  A barrier of one's arrive_and_wait is one CAS that
     * expects the state exactly and is not registered (abar__one_carry):
     * one that came first changed the state, and we say EBUSY; one that
     * comes later fails. */
    if (!atomic_compare_exchange_strong(&bi->state, &st, st | ST_FINISHED)) {
        atomic_fetch_and(&bi->inside, ~ABAR__INSIDE_DEAD); /* in use: as we were */
        return EBUSY;
    }
    atomic_store(&bi->magic, ABAR__MAGIC_DEAD); /* later calls: EINVAL */
    abar__tree_free(bi);
    return 0;
}

/* A waiter that sees CANCELLED may return, destroy and free the barrier
 * at once, so after setting it a cancel touches the barrier once more only:
 * the cancel bit of the futex word, its last write, which a destroy waits
 * for (abar_destroy); the wake uses only the address. */
int abar_cancel(abar_t *b)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return EINVAL;
    _Atomic uint32_t *const futex = &rel(bi)->futex; /* read before the flag: see above */
    const bool pshared = bi->flags & ABAR_PSHARED;
    /* acq_rel: the flag is ordered with every arrival and with the release. */
    uint64_t old = atomic_fetch_or_explicit(&bi->state, ST_CANCELLED, memory_order_acq_rel);
    if (old & ST_CANCELLED) return 0; /* idempotent */
    /* Flag the futex word, which spinners poll and a waiter about to sleep
     * read before it looked (so it does not sleep), then wake the sleepers;
     * all re-check the state and see CANCELLED.  Only the first cancel gets
     * here, so the bit changes the word.  release: pairs with their acquire
     * loads of the word, and with a destroy's. */
    atomic_fetch_or_explicit(futex, ABAR__FUTEX_CANCELLED, memory_order_release);
    /* Always wake: PARKED tells of sleepers of the open phase only (a lost
     * wake-up the model found, F2; today's park rule also prevents it, so
     * this wake is a second guard: docs/reliability.md). */
    abar__futex_wake_all(futex, pshared);
    return 0;
}

uint64_t abar_phase(const abar_t *b)
{
    struct abar_impl *bi = abar__live((abar_t *)b);
    if (bi == NULL) return 0;
    /* acquire: a caller that sees phase n sees what its completion wrote */
    return atomic_load_explicit(&rel(bi)->phase, memory_order_acquire);
}

/* The open phase's token, for a thread that did not arrive in it. */
abar_token_t abar_current(abar_t *b)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return tok_error(EINVAL);
    uint64_t s;
    uint64_t cur = abar__snapshot(bi, &s);
    if ((s & ST_CANCELLED) && !st_completing(s)) return tok_error(ECANCELED);
    return tok_make(abar__state_phase(cur, s), bi->ident);
}

abar_token_t abar_token_at(abar_t *b, uint64_t phase)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return tok_error(EINVAL);
    uint64_t s;
    uint64_t cur = abar__snapshot(bi, &s);
    uint64_t open = abar__state_phase(cur, s);
    if (phase > open) return tok_error(EINVAL); /* a phase no arrival has reached */
    /* The open phase of a cancelled barrier, as abar_current says it. */
    if (phase == open && (s & ST_CANCELLED) && !st_completing(s)) return tok_error(ECANCELED);
    return tok_make(phase, bi->ident);
}

int abar_token_error(abar_token_t t)
{
    return t.id == 0 ? abar__token_err(t) : 0;
}

int abar__test_set_phase(abar_t *b, uint64_t phase)
{
    struct abar_impl *bi = abar__live(b);
    if (bi == NULL) return EINVAL;
    uint64_t s = atomic_load(&bi->state);
    if (st_phase(s) != 0 || atomic_load(&rel(bi)->phase) != 0 ||
        st_pending(s) != (int32_t)atomic_load(&bi->expected))
        return EBUSY;
    if (bi->leaves) abar__tree_set_phase(bi, phase);
    atomic_store(&rel(bi)->phase, phase);
    atomic_store(&bi->state, st_make(phase, st_pending(s), s & ~(ST_PHASE_MASK << ST_PHASE_SHIFT) & ~ST_PENDING_MASK));
    return 0;
}
