/*
 * abar_internal.h - the private layout of abar_t and the state-word encoding.
 *
 * One 64-bit state word holds everything an arrival must change atomically:
 *
 *   bits  0..21  pending   arrivals still expected in this phase, plus a bias
 *                          of 2^21 (see below); 0 arrivals left: completing
 *   bits 22..41  drops     arrive_and_drop calls counted in this phase
 *   bit  42      PARKED    some waiter may sleep on the futex word
 *   bit  43      CANCELLED abar_cancel ran (sticky)
 *   bit  44      FINISHED  every participant dropped: no later phase
 *   bit  45      HALF      a pair's first arrival (ABAR__TICKET, below); pending
 *                          counts one fewer while it is set
 *   bits 46..63  phase     the phase number modulo 2^18
 *
 * A single arrival is one fetch-and-sub of 1 (arrive.c).  If it finds nothing
 * left to count it adds the 1 back; until then pending reads below zero, and
 * the bias keeps that from borrowing into the fields above.  Such a refused
 * arrival can only happen once the count is truly 0 (an arrival of 1 that
 * found pending >= 1 is always counted), so a negative reading always means
 * "0, with refusals being undone".  Arrivals of n > 1 and drops use a CAS and
 * never leave a transient.
 *
 * A pair without a completion function (ABAR__TICKET) counts a single
 * arrival with one CAS from a state it has judged: the first sets HALF, the
 * second adds HALF again, carrying out of it into the phase, which opens
 * the next phase with the same count in that one CAS (abar__ticket_add).
 * A refused pair arrival changes nothing, so it leaves no transient.
 *
 * Waiters do not watch the state word (every arrival writes it): they watch
 * the release words, `phase` and `futex`, which only a completer (after its
 * release CAS on `state`) and a cancel write, on a line of their own but in
 * a barrier of two (struct abar_impl).
 * `phase` counts completed phases and is the last thing a completer writes,
 * so a waiter that sees it move may return and free the barrier at once.
 * Between that CAS and that store the state word names phase S while `phase`
 * still says S-1; at all times phase ∈ {S-1, S} (abar__snapshot pins both).
 */
#ifndef ABAR_INTERNAL_H
#define ABAR_INTERNAL_H

#include "abar.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A spin-wait hint to the CPU. */
static inline void abar__pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

#define ABAR__MAGIC_LIVE 0x61626172u /* "abar" */
#define ABAR__MAGIC_DEAD 0x64656164u /* "dead" */

#define ST_PENDING_BIAS (UINT64_C(1) << 21)
#define ST_PENDING_MASK ((UINT64_C(1) << 22) - 1)
#define ST_DROP_SHIFT   22
#define ST_DROP_ONE     (UINT64_C(1) << ST_DROP_SHIFT)
#define ST_DROP_MASK    (((UINT64_C(1) << 20) - 1) << ST_DROP_SHIFT)
#define ST_PARKED       (UINT64_C(1) << 42)
#define ST_CANCELLED    (UINT64_C(1) << 43)
#define ST_FINISHED     (UINT64_C(1) << 44)
#define ST_HALF_SHIFT   45
#define ST_HALF         (UINT64_C(1) << ST_HALF_SHIFT)
#define ST_PHASE_SHIFT  46
#define ST_PHASE_BITS   18
#define ST_PHASE_MASK   ((UINT64_C(1) << ST_PHASE_BITS) - 1)

/* Arrivals still expected; below 0 while refused arrivals are being undone. */
static inline int32_t st_pending(uint64_t s)
{
    return (int32_t)(s & ST_PENDING_MASK) - (int32_t)ST_PENDING_BIAS - (int32_t)((s & ST_HALF) >> ST_HALF_SHIFT);
}
static inline uint32_t st_drops(uint64_t s) { return (uint32_t)((s & ST_DROP_MASK) >> ST_DROP_SHIFT); }
static inline uint64_t st_phase(uint64_t s) { return s >> ST_PHASE_SHIFT; }
static inline uint64_t phase_lo(uint64_t p) { return p & ST_PHASE_MASK; }
static inline uint64_t st_make(uint64_t phase, uint32_t pending, uint64_t flags)
{
    return (phase_lo(phase) << ST_PHASE_SHIFT) | flags | (pending + ST_PENDING_BIAS);
}
/* The last arrival has been counted; the completer owns the phase until its release. */
static inline bool st_completing(uint64_t s)
{
    return st_pending(s) <= 0 && !(s & ST_FINISHED);
}

#define ABAR__FUTEX_CANCELLED 0x80000000u /* futex: abar_cancel ran */

/* The release words, which only a completer (after its release CAS on
 * `state`) and a cancel write, and waiters watch. */
struct abar__release {
    _Atomic uint64_t phase;   /* completed phases: S-1 or S */
    _Atomic uint32_t futex;   /* what sleepers sleep on: bit 31 set by a cancel,
                                 the rest counts the releases that woke sleepers */
    uint32_t unused;
};

/* A barrier of at most ABAR__PAIR_MAX threads (a pair) is run on one line:
 * its release words sit beside the state word.  Without a completion
 * function (ABAR__TICKET) a single arrival is one CAS setting HALF, and
 * the second of a phase opens the next one by its carry (abar__ticket_add,
 * below), so the line travels once a phase between the two, as in a
 * plain sense-reversing barrier.  With more threads, waiters polling that
 * line would be invalidated by every arrival: their release words get a
 * line of their own, and every arrival is one fetch-and-sub.  (Measured on
 * the 16-core host: docs/lab/runs.md.) */
#define ABAR__PAIR_MAX 2u
#define ABAR__PAIR   0x100u /* internal flag: expected <= ABAR__PAIR_MAX at init */
#define ABAR__TICKET 0x200u /* internal flag: a pair without a completion function */

/* A wider barrier, unless process-shared, counts its arrivals in an arrival
 * tree of leaves (tree.c); the number of leaves is in flags. */
#define ABAR__TREE_MIN        5u  /* the smallest expected count with leaves */
#define ABAR__TREE_SMALL_MAX  10u /* up to this expected count, leaves of */
#define ABAR__TREE_FANOUT_SMALL 2u /*   about this many units; */
#define ABAR__TREE_FANOUT     4u  /* above it, of about this many (tree.c) */
#define ABAR__TREE_LEAVES_MAX 128u
#define ABAR__NLEAVES_SHIFT   16
#define ABAR__NLEAVES_MASK    (0xffu << ABAR__NLEAVES_SHIFT)
struct abar__leaf { _Alignas(64) _Atomic uint64_t w; };

struct abar_impl {
    /* line 0: every arrival writes it */
    _Atomic uint64_t state;   /* see above */
    struct abar__release pair;/* a pair's release words */
    char pad0[40];
    /* line 1: the release words of a larger barrier, and what every call
     * reads (written only at init, and `expected` by a completer when drops
     * change it) */
    struct abar__release wide;
    _Atomic uint32_t magic;
    uint32_t flags;           /* ABAR_PSHARED | ABAR_WAIT_* | ABAR__PAIR | ABAR__TICKET | leaves << 16 */
    uint64_t ident;           /* identity carried by tokens; new at every init */
    abar_completion_fn *completion;
    void *arg;
    _Atomic uint32_t expected;/* this phase's expected count; only completers write it */
    _Atomic uint32_t slept;   /* the last release woke sleepers (a hint: abar__block) */
    struct abar__leaf *leaves;/* the arrival tree's leaves, or NULL (tree.c) */
    /* line 2: waiters of a process-shared barrier register here, away from
     * the arrivals (those of a private one use hazard slots, hazard.c) */
    _Atomic uint32_t inside;  /* threads blocked in a wait: destroy is EBUSY while > 0 */
    _Atomic uint32_t asleep[2];/* waiters of a phase of each parity in FUTEX_WAIT, or woken
                                  and not yet back from it (a hint: abar__block) */
    _Atomic uint32_t spin_shift;/* the spin budget is doubled this many times (futex.c) */
    _Atomic uint64_t parked_at;/* when a waiter last set PARKED, ns (futex.c) */
    _Atomic uint64_t woke_at; /* when a completer last woke sleepers, ns (futex.c) */
    _Atomic uint64_t wake_ns; /* how long woken sleepers take to run again, recently (futex.c) */
    char pad2[24];
};

_Static_assert(sizeof(struct abar_impl) <= sizeof(abar_t), "abar_t too small");
_Static_assert(offsetof(struct abar_impl, wide) == 64 && offsetof(struct abar_impl, inside) == 128,
               "one line for arrivals, one for the release, one for waiters");
_Static_assert(_Alignof(abar_t) >= 64, "abar_t must be cache-line aligned");

static inline struct abar_impl *impl(abar_t *b) { return (struct abar_impl *)(void *)b; }

/* The barrier's release words (flags is constant from init to destroy). */
static inline struct abar__release *rel(struct abar_impl *b)
{
    return b->flags & ABAR__PAIR ? &b->pair : &b->wide;
}

static inline abar_token_t tok_make(uint64_t phase, uint64_t ident)
{
    return (abar_token_t){ .raw = phase, .id = ident };
}
static inline abar_token_t tok_error(int err)
{
    return (abar_token_t){ .raw = (uint64_t)err, .id = 0 };
}

/* An arrival refused because the barrier is cancelled or finished, judged
 * from a relaxed read of the word that said so.  acquire: pairs with
 * abar_cancel's release RMWs on `state` and on the futex word (and a last
 * drop's release), so that the refused caller sees what the cancelling
 * thread wrote before its cancel, as a wait returning ECANCELED does. */
static inline abar_token_t tok_cancelled(void)
{
    atomic_thread_fence(memory_order_acquire);
    return tok_error(ECANCELED);
}

/* The impl of b if b is a live barrier, else NULL. */
static inline struct abar_impl *abar__live(abar_t *b)
{
    if (b == NULL) return NULL;
    struct abar_impl *bi = impl(b);
    /* relaxed: magic changes only at init and destroy, which the caller must
     * not race with calls (beyond what EBUSY detects). */
    if (atomic_load_explicit(&bi->magic, memory_order_relaxed) != ABAR__MAGIC_LIVE)
        return NULL;
    return bi;
}

/* Reads the completed-phase count and a state word consistent with it: the
 * state then names phase S = cur or cur + 1 (a release being published). */
static inline uint64_t abar__snapshot(struct abar_impl *b, uint64_t *sp)
{
    for (;;) {
        /* acquire: pairs with the completer's release store of phase */
        uint64_t cur = atomic_load_explicit(&rel(b)->phase, memory_order_acquire);
        /* acquire: pairs with every release RMW on state */
        uint64_t s = atomic_load_explicit(&b->state, memory_order_acquire);
        /* phase is monotonic: equal reads mean it held still around the load
         * of s, when phase ∈ {S-1, S} held. */
        if (atomic_load_explicit(&rel(b)->phase, memory_order_relaxed) == cur) {
            *sp = s;
            return cur;
        }
    }
}
/* The phase S the state word s names, given cur from the same snapshot. */
static inline uint64_t abar__state_phase(uint64_t cur, uint64_t s)
{
    return st_phase(s) == phase_lo(cur) ? cur : cur + 1;
}

/* ---- shared between the source files ------------------------------------- */
/* The completions this thread is running, innermost first (a completion may
 * arrive on another barrier and so run that one's completion, nested). */
struct abar__frame { const struct abar_impl *b; const struct abar__frame *outer; };
/* initial-exec: a thread-local read is one load (no __tls_get_addr call in
 * a shared library); the few bytes come from the static TLS surplus when
 * the library is loaded by dlopen. */
#define ABAR__TLS _Thread_local __attribute__((tls_model("initial-exec")))
extern ABAR__TLS const struct abar__frame *abar__completing;
static inline bool abar__in_completion_of(const struct abar_impl *b)
{
    for (const struct abar__frame *f = abar__completing; f; f = f->outer)
        if (f->b == b) return true;
    return false;
}
/* `inside` while a destroy holds the memory: a registering waiter sees it. */
#define ABAR__INSIDE_DEAD 0x80000000u
/* The error an invalid token carries (anything else is a forgery: EINVAL). */
static inline int abar__token_err(abar_token_t t)
{
    return t.raw == (uint64_t)ECANCELED ? ECANCELED : EINVAL;
}
uint64_t abar__complete(struct abar_impl *b, uint64_t s);
void abar__publish(struct abar_impl *b, uint64_t p, bool parked);
abar_token_t abar__ticket_slow(struct abar_impl *b, uint64_t before, uint64_t s, uint64_t ident,
                               bool *last);
uint64_t abar__ticket_release_wrapped(struct abar_impl *b, uint64_t s);

/* The registration of an arrival made through abar_arrive and friends
 * (arrive.c): the arrival that completes the phase gives it up just before
 * its release (abar__arrival_unregister), since a released waiter may
 * destroy the barrier at once and must not find it in use. */
struct abar__reg { const struct abar_impl *b; bool counted; bool open; };
extern ABAR__TLS struct abar__reg *abar__arrival_reg;
void abar__arrival_unregister(struct abar_impl *b);
/* The release of phase p is next: drop this thread's arrival registration
 * on b, if it has one open. */
static inline void abar__before_release(struct abar_impl *b)
{
    const struct abar__reg *g = abar__arrival_reg;
    if (__builtin_expect(g != NULL, 0) && g->b == b && g->open) abar__arrival_unregister(b);
}

/* The phase of an arrival whose RMW found the low phase bits `lo`, from
 * reads of `phase` taken before the RMW (`before`) and after it (`after`,
 * by a caller still registered, so the barrier is alive): before <= S <=
 * after + 1, and S = lo modulo 2^ST_PHASE_BITS.  That names S exactly
 * while fewer than 2^ST_PHASE_BITS - 1 phases complete between the two
 * reads; past that (a thread stalled across them) it is the latest
 * candidate, so a wait on the token is never released early. */
static inline uint64_t abar__bracket_phase(uint64_t lo, uint64_t after)
{
    const uint64_t top = after + 1;
    return top - phase_lo(top - lo);
}

/* A single arrival on a pair without a completion function (ABAR__TICKET),
 * b live, the caller registered (hazard slot or `inside`).  Every arrival
 * is one CAS on the state word, taken only from a state it recognises, so
 * nothing is ever counted and taken back (arrivals are anonymous: any
 * thread may arrive any number of times, and a refused arrival must leave
 * no transient another arrival could count on).  The two usual cases are
 * inline, because at T = 2 every instruction between a waiter seeing its
 * release and its next arrival is on the critical path (docs/lab/where-time-goes.md):
 *   - FIRST: phase p open, 2 pending, no flag: set HALF (pending reads 1);
 *   - CARRIED: HALF set, or a barrier of one (1 pending): the CAS opens
 *     phase p+1 with the same count (HALF carries into the phase bits; a
 *     barrier of one adds one to them) and this thread then releases p.
 * A drop is never in such a state (it takes pending from 2 to 1 without
 * HALF, and the other arrival then completes the general way, applying
 * it).  Anything else (a flag, drops, a state naming another phase than
 * the `phase` word read first) is abar__ticket_slow's (arrive.c).
 *
 * Exactness of the phase: the CAS names the state's low phase bits; the
 * full phase p comes from `phase`, read first.  The state names p or p+1
 * (phase in {S-1, S}), and the CAS checks it names p, so p is the phase
 * counted in, unless 2^ST_PHASE_BITS phases passed between the read and
 * the CAS: the read of `phase` after the CAS tells (it must still be p,
 * since p cannot be published without this arrival's release, or, for
 * FIRST, this arrival).  The carrier, which releases p, must be exact, and
 * so re-reads it before its release; a FIRST caller checks its token with
 * abar__ticket_first_phase. */
enum { ABAR__TICKET_FIRST, ABAR__TICKET_CARRIED, ABAR__TICKET_OTHER };
static inline int abar__ticket_add(struct abar_impl *b, uint64_t *before, uint64_t *s)
{
    /* acquire: pairs with the completers' release stores of phase */
    const uint64_t p = atomic_load_explicit(&b->pair.phase, memory_order_acquire);
    const uint64_t open2 = st_make(p, 2, 0), open1 = st_make(p, 1, 0);
    uint64_t v = atomic_load_explicit(&b->state, memory_order_relaxed);
    uint64_t nv;
    *before = p;
    do {
        if (v == open2 || v == (open2 | ST_HALF)) nv = v + ST_HALF;
        else if (v == open1) nv = v + (UINT64_C(1) << ST_PHASE_SHIFT);
        else {
            *s = v;
            return ABAR__TICKET_OTHER; /* abar__ticket_slow's */
        }
        /* acq_rel: release publishes this thread's writes to the arrival
         * that completes the phase; acquire gives that arrival the other's
         * writes (all arrivals form one release sequence on `state`). */
    } while (!atomic_compare_exchange_weak_explicit(&b->state, &v, nv, memory_order_acq_rel,
                                                    memory_order_relaxed));
    *s = v;
    if (v == open2) return ABAR__TICKET_FIRST;
    /* We carried: phase p+1 is open, and releasing p is ours.  relaxed: we
     * wrote the state after the read above, so only a wrap changes it. */
    if (__builtin_expect(atomic_load_explicit(&b->pair.phase, memory_order_relaxed) != p, 0)) {
        *before = abar__ticket_release_wrapped(b, v);
        return ABAR__TICKET_CARRIED;
    }
    /* The hint abar__block reads (abar__publish); relaxed: a hint. */
    if (atomic_load_explicit(&b->slept, memory_order_relaxed))
        atomic_store_explicit(&b->slept, 0, memory_order_relaxed);
    abar__before_release(b);
    /* Release the waiter, in order (p is published).  release: our writes
     * and the other arrival's (acquired by the CAS). */
    atomic_store_explicit(&b->pair.phase, p + 1, memory_order_release);
    return ABAR__TICKET_CARRIED;
}

/* A barrier of one in its usual state (phase p open, 1 pending, no flag):
 * one CAS completes p and opens p+1, then the release.  The caller need
 * not be registered: until that release abar_destroy says EBUSY (the state
 * names a phase not yet published), a destroy that said 0 set FINISHED in
 * the state last (so the CAS fails), and nothing is touched after the
 * release.  False, having changed nothing, in any other state. */
static inline bool abar__one_carry(struct abar_impl *b)
{
    /* acquire: pairs with the completers' release stores of phase */
    const uint64_t p = atomic_load_explicit(&b->pair.phase, memory_order_acquire);
    uint64_t v = st_make(p, 1, 0);
    /* acq_rel: as abar__ticket_add's */
    if (!atomic_compare_exchange_strong_explicit(&b->state, &v, v + (UINT64_C(1) << ST_PHASE_SHIFT),
                                                 memory_order_acq_rel, memory_order_relaxed))
        return false;
    /* relaxed: only a wrap changes it (abar__ticket_add) */
    if (__builtin_expect(atomic_load_explicit(&b->pair.phase, memory_order_relaxed) != p, 0)) {
        (void)abar__ticket_release_wrapped(b, v);
        return true;
    }
    if (atomic_load_explicit(&b->slept, memory_order_relaxed))
        atomic_store_explicit(&b->slept, 0, memory_order_relaxed);
    abar__before_release(b);
    /* release: our writes, and every earlier phase's */
    atomic_store_explicit(&b->pair.phase, p + 1, memory_order_release);
    return true;
}

/* The token of a FIRST arrival (abar__ticket_add), the caller still
 * registered: p = before, unless `phase` has moved so far since that p
 * may be a wrap (abar__bracket_phase). */
static inline uint64_t abar__ticket_first_phase(struct abar_impl *b, uint64_t before, uint64_t s)
{
    /* relaxed: only the value matters; the wait acquires */
    const uint64_t after = atomic_load_explicit(&b->pair.phase, memory_order_relaxed);
    if (__builtin_expect(after - before < ST_PHASE_MASK, 1)) return before;
    return abar__bracket_phase(st_phase(s), after);
}

static inline abar_token_t abar__ticket_arrive(struct abar_impl *b, bool *last)
{
    const uint64_t ident = b->ident;
    uint64_t before, s;
    const int k = abar__ticket_add(b, &before, &s);
    *last = k == ABAR__TICKET_CARRIED;
    if (k == ABAR__TICKET_FIRST) return tok_make(abar__ticket_first_phase(b, before, s), ident);
    if (k == ABAR__TICKET_CARRIED) return tok_make(before, ident);
    return abar__ticket_slow(b, before, s, ident, last);
}

/* One arrival on a live barrier; `last` says whether it completed the
 * phase (exactly one arrival a phase is told true). */
abar_token_t abar__arrive1(struct abar_impl *bi, bool *last);

/* hazard.c: per-thread announcements of the barrier a thread is blocked on */
#define ABAR__HAZARD_DEPTH 4 /* nested waits (a wait in a signal handler, say) */
struct abar__hazard {
    _Alignas(64) _Atomic(const void *) slot[ABAR__HAZARD_DEPTH];
    unsigned depth;           /* slots in use; only the owner touches it */
    _Atomic int used;         /* owned by a live thread */
    struct abar__hazard *next;
};
struct abar__hazard *abar__hazard_claim(void);
extern ABAR__TLS struct abar__hazard *abar__hazard_self;
/* This thread's hazard record (NULL if none could be allocated). */
static inline struct abar__hazard *abar__hazard_mine(void)
{
    struct abar__hazard *h = abar__hazard_self;
    return h ? h : abar__hazard_claim();
}
bool abar__hazard_any(const void *b);
/* The two halves of the fence between a waiter's slot store and its later
 * loads, and destroy's mark and its slot loads (hazard.c). */
extern bool abar__hazard_asym;
static inline void abar__hazard_fence_light(void)
{
    if (abar__hazard_asym) atomic_signal_fence(memory_order_seq_cst); /* the compiler's order */
    else atomic_thread_fence(memory_order_seq_cst);
}
void abar__hazard_fence_heavy(void);

/* Takes the thread's next hazard slot for b (arrive_wait.c): the depth first, then the
 * slot, so that a wait in a signal handler that interrupts us between the
 * two takes the next slot, not ours (the signal fence is the compiler's
 * order, all a handler on this thread needs).  Then our slot, then
 * destroy's mark: destroy does its mark, a fence, then reads the slots, so
 * one of us sees the other; the fence here is light (above): destroy's
 * heavy one makes up for it.  Returns the slot. */
static inline unsigned slot_push(struct abar__hazard *h, const struct abar_impl *b)
{
    const unsigned d = h->depth++;
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&h->slot[d], b, memory_order_relaxed);
    abar__hazard_fence_light();
    return d;
}

/* Clears slot d, then gives it back (the slot, then the depth, as in
 * slot_push).  release: a destroy that sees it clear runs after our last
 * access to the barrier. */
static inline void slot_pop(struct abar__hazard *h, unsigned d)
{
    atomic_store_explicit(&h->slot[d], NULL, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    h->depth = d;
}
static inline void abar__leave(struct abar_impl *b, bool counted);

/* Announces this thread as inside a call on b (a wait, or an arrival), so that abar_destroy says EBUSY
 * until leave(): a slot in the thread's own hazard record for a private
 * barrier (no shared write), the count in the barrier for a process-shared
 * one (or when no slot is free).  Returns false if a destroy got there first:
 * then the caller must not wait on b. */
static inline __attribute__((always_inline)) bool abar__enter(struct abar_impl *b, bool *counted)
{
    struct abar__hazard *h;
    if (!(b->flags & ABAR_PSHARED) && (h = abar__hazard_mine()) && h->depth < ABAR__HAZARD_DEPTH) {
        (void)slot_push(h, b);
        *counted = false;
        /* A destroy has marked the barrier: wait for its verdict.  It
         * either saw our slot (EBUSY, it clears the mark) or not (the
         * barrier is dead: we wrote only our own slot). */
        while (atomic_load(&b->inside) & ABAR__INSIDE_DEAD) {
            if (atomic_load(&b->magic) != ABAR__MAGIC_LIVE) {
                abar__leave(b, false);
                return false;
            }
            abar__pause();
        }
        return true;
    }
    /* Counted in `inside` (process-shared, or no slot left): a seq_cst CAS,
     * totally ordered with destroy's CAS on the same word, that never
     * counts us into a word a destroy has marked, so a call that a
     * successful destroy did not see writes nothing. */
    *counted = true;
    uint32_t v = atomic_load_explicit(&b->inside, memory_order_relaxed);
    for (;;) {
        if (v & ABAR__INSIDE_DEAD) { /* wait for the verdict */
            if (atomic_load(&b->magic) != ABAR__MAGIC_LIVE) return false;
            abar__pause();
            v = atomic_load(&b->inside);
        } else if (atomic_compare_exchange_weak(&b->inside, &v, v + 1)) {
            return true;
        }
    }
}

/* The end of abar__enter(): after it this thread touches b no more.  release: a
 * destroy that sees us gone runs after our last access. */
static inline __attribute__((always_inline)) void abar__leave(struct abar_impl *b, bool counted)
{
    if (counted) {
        atomic_fetch_sub_explicit(&b->inside, 1, memory_order_release);
    } else {
        struct abar__hazard *h = abar__hazard_mine();
        slot_pop(h, h->depth - 1);
    }
}

unsigned abar__test_waiters(abar_t *b); /* test hook: threads registered on b */

/* tree.c: the arrival tree of a wide barrier */
static inline uint32_t abar__nleaves(const struct abar_impl *b)
{
    return (b->flags & ABAR__NLEAVES_MASK) >> ABAR__NLEAVES_SHIFT;
}
int abar__tree_setup(struct abar_impl *b, uint32_t expected);
int32_t abar__test_pending(abar_t *b); /* test hook: arrivals the open phase still expects */
void abar__tree_free(struct abar_impl *b);
void abar__tree_set_phase(struct abar_impl *b, uint64_t phase);
abar_token_t abar__tree_arrive1(struct abar_impl *b, bool drop, bool *last);
abar_token_t abar__tree_arrive_n(struct abar_impl *b, uint32_t n, bool *last);

/* futex.c */
void abar__futex_wake_all(_Atomic uint32_t *word, bool pshared);
int abar__futex_wait(_Atomic uint32_t *word, uint32_t val, bool pshared,
                     const struct timespec *abstime);
uint64_t abar__spin_ns(void);
uint64_t abar__spin_budget(const struct abar_impl *b, unsigned factor);
uint64_t abar__spin_lean(const struct abar_impl *b);
void abar__spin_parking(struct abar_impl *b);
void abar__spin_learn(struct abar_impl *b);
void abar__spin_woken(struct abar_impl *b);
unsigned abar__ncpu(void);
extern _Atomic unsigned abar__ncpu_cache; /* abar__ncpu's answer, 0 until computed */
/* abar__ncpu without a call once it is known (at load: futex.c) */
static inline unsigned abar__ncpu_fast(void)
{
    /* relaxed: a racy first computation yields the same value everywhere */
    const unsigned v = atomic_load_explicit(&abar__ncpu_cache, memory_order_relaxed);
    return v ? v : abar__ncpu();
}
unsigned abar__cgroup_cpus(const char *root); /* cpus.c */
uint64_t abar__now_ns(void);
/* Asks for the line at p in the state a write needs: a hint, with no
 * effect a program can see.  On x86-64, PREFETCHW where the CPU has it
 * (abar__prefetchw_ok, cpus.c), else nothing; elsewhere the compiler's
 * write prefetch. */
extern bool abar__prefetchw_ok;
static inline void abar__prefetch_write(const volatile void *p)
{
#if defined(__x86_64__)
    if (abar__prefetchw_ok) __asm__ __volatile__("prefetchw %0" : : "m"(*(const volatile char *)p));
#else
    __builtin_prefetch((const void *)p, 1, 3);
#endif
}
/* A waiter released in its first spin (wait.h lean_spin): its next call is
 * most likely its next arrival, an RMW on `state` (on a barrier without
 * leaves), and from here to that RMW is the critical path at T = 3, 4.
 * Asking for the line now overlaps its transfer with the way back: 2.5-3 %
 * a phase at T = 3, 4 on the 16-core host (docs/lab/placement.md).
 * The caller is still registered: the barrier is alive.
 * Returns true, for lean_spin's expression. */
static inline bool abar__prefetch_next_arrival(const struct abar_impl *b)
{
    if (!(b->flags & ABAR__NLEAVES_MASK)) abar__prefetch_write(&b->state);
    return true;
}
/* The pair's add (arrive_wait.c pair_arrive_and_wait) reads `phase` and then adds
 * on the same line.  Where the other thread's next add has taken the line
 * back meanwhile (the carrier returns at once; the released thread only
 * once it has seen the release), the read fetches it shared and the add
 * fetches it again, owned.  Asking for it owned first makes that one
 * transfer: 0.957-0.997x the time at T = 2 (four same-line tables on one
 * machine, where an unedited copy of the core gave 0.975-1.017x;
 * docs/lab/where-time-goes.md, "A prefetch before the pair's add"). */
static inline void abar__prefetch_pair_add(const struct abar_impl *b) { abar__prefetch_write(&b->state); }

/* Test hook: start a freshly initialised barrier at a chosen phase. */
int abar__test_set_phase(abar_t *b, uint64_t phase);

#endif
