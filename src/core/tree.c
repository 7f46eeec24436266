/* tree.c - the arrival tree of a wide barrier: arrivals combined in leaves.
 *
 * With one counter, the T arrivals of a phase are T transfers of one line,
 * one after the other.  A wide barrier (abar__tree_setup) instead splits
 * its expected count E into L leaves, one line each, leaf i holding a quota
 * q_i (the q_i sum to E, each about 2, or 4 from 11 threads).  An arrival
 * takes a unit of a leaf: its home leaf (by thread), or, if that one is
 * full, the next with a unit left.  Arrivals stay anonymous: any thread may
 * take any unit, and since a phase has exactly E units, E arrivals always
 * find one.
 * The arrival that takes a leaf's last unit forwards the leaf to the state
 * word: one RMW that subtracts q_i from pending and adds the leaf's drops.
 * The forward that takes pending to 0 completes the phase (abar__complete,
 * unchanged).  So a phase costs about F + L transfers in sequence, not T.
 *
 * The leaf word:
 *
 *   bits  0..13  taken   units taken in the tagged phase
 *   bits 14..27  quota   the leaf's quota in that phase
 *   bits 28..41  drops   arrive_and_drop calls among them
 *   bit  42      LOCK    an arrive_n of n > 1 is deciding (below)
 *   bits 45..62  tag     the phase the counts belong to, modulo 2^ST_PHASE_BITS (18)
 *
 * No one resets a leaf at the end of a phase: a leaf tagged with an earlier
 * phase is a full leaf of that phase, and the first arrival of the next
 * phase to meet it writes (P, q_i(P), 1) by CAS.  Why a tag older than the
 * open phase P always means that: P-1 completed only once every leaf with
 * units had been filled at P-1, and quotas never grow (drops only shrink E,
 * and q_i is monotone in E), so a leaf with a unit at P had one at P-1.
 * A leaf with no unit at P is skipped without looking at it.
 *
 * An arrival's phase is the `phase` word it reads first (the completed
 * count: P is open, or completed and not yet published).  Its CAS on a leaf
 * tagged P (or older) with a unit free proves P still open: a completed P
 * has every leaf full at P.  A leaf tagged after P says P completed: read
 * `phase` again.  Every leaf full at P while the state word still names P
 * means every unit of P is taken: the arrival is one too many (EINVAL),
 * counted nowhere.
 *
 * arrive_n(n > 1) is all or nothing: it locks every leaf with units (LOCK,
 * in index order, so two of them cannot deadlock), counts the free units,
 * and either takes n of them or refuses, then unlocks.  Single arrivals
 * skip a locked leaf, and wait for the unlock only if no other leaf has a
 * unit.  Meanwhile no locked leaf can be filled, so the phase cannot end.
 *
 * Cancel: an arrival reads the futex word's cancel bit (on the line it reads
 * `phase` from) and refuses if set.  A forward that meets CANCELLED in the
 * state word takes itself back, as a refused arrival does (arrive.c): the
 * phase then never completes, and its waiters see ECANCELED.
 *
 * Memory: the leaves are one allocation per barrier (process-private
 * barriers only), made at init and freed at destroy; a barrier whose
 * allocation fails counts on the state word alone.  Destroy may follow the
 * last phase at once, so no arrival touches the barrier once the phase
 * could complete without it: a single arrival's last touch is the CAS that
 * takes its unit, or, if that filled the leaf, its forward; an arrive_n
 * unlocks its partly filled leaves last (while it holds a unit the phase
 * cannot end) and then only forwards what it filled.
 */
#include "abar_internal.h"

#include <errno.h>
#include <stdlib.h>

#define LF_TAKEN_MASK  ((UINT64_C(1) << 14) - 1)
#define LF_QUOTA_SHIFT 14
#define LF_DROP_SHIFT  28
#define LF_DROP_ONE    (UINT64_C(1) << LF_DROP_SHIFT)
#define LF_LOCK        (UINT64_C(1) << 42)
#define LF_TAG_SHIFT   45

static inline uint32_t lf_taken(uint64_t w) { return (uint32_t)(w & LF_TAKEN_MASK); }
static inline uint32_t lf_quota(uint64_t w) { return (uint32_t)((w >> LF_QUOTA_SHIFT) & LF_TAKEN_MASK); }
static inline uint32_t lf_drops(uint64_t w) { return (uint32_t)((w >> LF_DROP_SHIFT) & LF_TAKEN_MASK); }
static inline uint64_t lf_make(uint64_t phase, uint32_t quota, uint32_t taken, uint32_t drops)
{
    return (phase_lo(phase) << LF_TAG_SHIFT) | ((uint64_t)drops << LF_DROP_SHIFT) |
           ((uint64_t)quota << LF_QUOTA_SHIFT) | taken;
}
/* How many phases the leaf's tag is behind phase p: 0 (the same), 1 (the
 * last phase: a full leaf), or "newer" (< 0: p has completed). */
static inline int32_t lf_age(uint64_t w, uint64_t p)
{
    uint64_t d = phase_lo(p - (w >> LF_TAG_SHIFT));
    return d < (ST_PHASE_MASK >> 1) ? (int32_t)d : -1;
}

/* Leaf i's quota when the phase expects e: e split as evenly as it goes,
 * the first leaves one more.  Monotone in e, as the header needs. */
static inline uint32_t quota_of(uint32_t e, uint32_t nleaves, uint32_t i)
{
    return e / nleaves + (i < e % nleaves);
}

/* ---- set-up ------------------------------------------------------------- */

static _Atomic uint32_t tree_min_cache;

/* The smallest expected count that gets a tree: ABAR_TREE_MIN from the
 * environment (tests force trees on small barriers with it), else 5: at
 * 3 and 4 threads the single counter was the faster in the same runs
 * (measured on the 16-core host: docs/lab/where-time-goes.md). */
static uint32_t tree_min(void)
{
    /* relaxed: every thread computes the same value */
    uint32_t v = atomic_load_explicit(&tree_min_cache, memory_order_relaxed);
    if (v) return v;
    v = ABAR__TREE_MIN;
    const char *e = getenv("ABAR_TREE_MIN");
    if (e && *e) {
        char *end;
        unsigned long x = strtoul(e, &end, 10);
        if (*end == '\0' && x >= 2) v = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
    }
    atomic_store_explicit(&tree_min_cache, v, memory_order_relaxed);
    return v;
}

int abar__tree_setup(struct abar_impl *b, uint32_t expected)
{
    if ((b->flags & ABAR_PSHARED) || expected < tree_min()) return 0;
    /* Leaves of 2 up to 10 threads, of 4 above (a phase costs about F + L
     * transfers in sequence, F units a leaf and L leaves).  On the 16-core
     * host, paired in one process with what came before (the single
     * counter below 9 threads, leaves of 4 from 9), leaves of 2 were faster
     * at 7 and 8 threads, a little at 5 and 6, and level at 9 and 10; leaves
     * of 4 were the faster from 11 (docs/lab/runs.md). */
    const uint32_t fan = expected <= ABAR__TREE_SMALL_MAX ? ABAR__TREE_FANOUT_SMALL : ABAR__TREE_FANOUT;
    uint32_t n = (expected + fan - 1) / fan;
    if (n > ABAR__TREE_LEAVES_MAX) n = ABAR__TREE_LEAVES_MAX;
    if (n < 2 || (expected + n - 1) / n > LF_TAKEN_MASK) return 0;
    struct abar__leaf *lv = aligned_alloc(64, n * sizeof *lv);
    if (lv == NULL) return 0; /* a barrier all the same, on the state word */
    /* Tagged one phase before the first: full leaves of a phase gone by. */
    for (uint32_t i = 0; i < n; i++) atomic_init(&lv[i].w, lf_make(ST_PHASE_MASK, 0, 0, 0));
    b->leaves = lv;
    b->flags |= n << ABAR__NLEAVES_SHIFT;
    return 0;
}

/* At destroy (or an init over a live barrier).  `flags` stays as it is: a
 * wait that races the destroy may still read it (and then sees the magic
 * dead); nothing reads the leaf count without `leaves`. */
void abar__tree_free(struct abar_impl *b)
{
    free(b->leaves);
    b->leaves = NULL;
}

void abar__tree_set_phase(struct abar_impl *b, uint64_t phase)
{
    for (uint32_t i = 0; i < abar__nleaves(b); i++)
        atomic_store_explicit(&b->leaves[i].w, lf_make(phase - 1, 0, 0, 0), memory_order_relaxed);
}

/* Test hook: the arrivals the open phase still expects (the state word's
 * count less the units taken in leaves not yet forwarded).  A snapshot for
 * tests that poll it: a leaf just filled and not yet forwarded reads one
 * leaf's worth too high for a moment. */
int32_t abar__test_pending(abar_t *bar)
{
    struct abar_impl *b = impl(bar);
    uint64_t s;
    const uint64_t cur = abar__snapshot(b, &s);
    const uint64_t open = abar__state_phase(cur, s);
    int32_t n = st_pending(s);
    for (uint32_t i = 0; b->leaves && i < abar__nleaves(b); i++) {
        const uint64_t w = atomic_load(&b->leaves[i].w);
        if (lf_age(w, open) == 0 && lf_taken(w) < lf_quota(w)) n -= (int32_t)lf_taken(w);
    }
    return n;
}

/* ---- arrivals ----------------------------------------------------------- */

/* The leaf a thread tries first.  Its first draw is a number per thread,
 * so threads that arrive on the same barrier spread evenly; after that it
 * is the leaf where the thread last found a unit.  Threads made for one
 * barrier's use (a team, a pool) rarely number from a multiple of the leaf
 * count, so some leaf's threads outnumber its quota and one of them would
 * look further every phase; moving to where it found room, each settles
 * where there is room for it, and then no arrival looks past its first leaf. */
static _Atomic uint32_t next_home;
static ABAR__TLS uint32_t home_plus1; /* 0: not drawn yet */

static inline uint32_t home_leaf(uint32_t nleaves)
{
    uint32_t h = home_plus1;
    if (h == 0) {
        /* relaxed: only distinctness matters */
        h = atomic_fetch_add_explicit(&next_home, 1, memory_order_relaxed) + 1;
        home_plus1 = h;
    }
    return (h - 1) % nleaves;
}

/* Forwards a leaf this thread filled (several leaves' sums if an arrive_n
 * filled more than one) to the state word.  0, or ECANCELED where the
 * barrier was cancelled (or finished) before it: the forward is taken back
 * and this thread's arrival is refused (its caller returns the error). */
static int forward(struct abar_impl *b, uint32_t units, uint32_t drops, bool *last)
{
    const uint64_t delta = (uint64_t)drops * ST_DROP_ONE - units;
    /* acq_rel: release publishes the writes of every arrival in the leaf
     * (its CASes, acq_rel, gave them to us) to the completer; acquire gives
     * us, should we complete, every other forward's. */
    uint64_t s = atomic_fetch_add_explicit(&b->state, delta, memory_order_acq_rel);
    if ((s & (ST_CANCELLED | ST_FINISHED)) || st_pending(s) < (int32_t)units) {
        /* Cancelled: the phase never completes; take the forward back as a
         * refused arrival does (a completer waits for the undo). */
        atomic_fetch_sub_explicit(&b->state, delta, memory_order_relaxed);
        return s & (ST_CANCELLED | ST_FINISHED) ? ECANCELED : EINVAL;
    }
    if (st_pending(s + delta) == 0) { /* the completer: it owns the phase */
        abar__complete(b, s + delta);
        *last = true;
    }
    return 0;
}

/* No unit was free at phase p: a verdict from the state word, or 0 to
 * look again (p completed meanwhile, or is being published). */
static int none_free(struct abar_impl *b, uint64_t p)
{
    /* acquire: as in abar__snapshot */
    uint64_t s = atomic_load_explicit(&b->state, memory_order_acquire);
    if (s & (ST_CANCELLED | ST_FINISHED)) return ECANCELED;
    if (atomic_load_explicit(&rel(b)->phase, memory_order_acquire) != p) return 0;
    if (st_phase(s) != phase_lo(p)) { /* completed, not yet published */
        abar__pause();
        return 0;
    }
    return EINVAL; /* every unit of p is taken: one arrival too many */
}

/* The phase of an arrival counted in a leaf taken at phase p, read after
 * it (the caller is registered): p, unless `phase` has moved so far that
 * p may be a wrap of the low bits (abar__bracket_phase). */
static inline uint64_t checked_phase(const struct abar__release *r, uint64_t p)
{
    /* relaxed: only the value matters */
    const uint64_t after = atomic_load_explicit(&r->phase, memory_order_relaxed);
    return after - p < ST_PHASE_MASK >> 1 ? p : abar__bracket_phase(phase_lo(p), after);
}

/* One arrival (a drop if `drop`) on a barrier with leaves. */
abar_token_t abar__tree_arrive1(struct abar_impl *b, bool drop, bool *last)
{
    *last = false;
    const uint64_t ident = b->ident; /* read now: after our CAS we may not touch b */
    struct abar__leaf *lv = b->leaves;
    const uint32_t nl = abar__nleaves(b);
    const uint32_t home = home_leaf(nl);
    struct abar__release *r = rel(b);
    for (;;) {
        /* acquire: pairs with the completers' release stores of phase, so
         * `expected` below is this phase's (or, if p completed meanwhile, a
         * later one's: the CASes below then fail or skip) */
        const uint64_t p = atomic_load_explicit(&r->phase, memory_order_acquire);
        if (atomic_load_explicit(&r->futex, memory_order_relaxed) & ABAR__FUTEX_CANCELLED)
            return tok_cancelled();
        const uint32_t e = atomic_load_explicit(&b->expected, memory_order_relaxed);
        bool locked = false, newer = false;
        uint32_t i = home;
        for (uint32_t k = 0; k < nl && !newer; k++, i = i + 1 == nl ? 0 : i + 1) {
            const uint32_t q = quota_of(e, nl, i);
            if (q == 0) continue;
            uint64_t w = atomic_load_explicit(&lv[i].w, memory_order_relaxed);
            for (;;) {
                uint64_t nw;
                /* p still the completed count, after the load of w (each
                 * CAS that failed loaded it again): the leaf's age is then
                 * judged against a phase at most one behind its tag, which
                 * the tag's 18 bits tell apart; a thread stalled past 2^17
                 * phases would misjudge it.  relaxed: the leaf CAS orders. */
                if (atomic_load_explicit(&r->phase, memory_order_relaxed) != p) { newer = true; break; }
                const int32_t age = lf_age(w, p);
                if (w & LF_LOCK) { locked = true; break; }
                if (age < 0) { newer = true; break; }
                if (age > 0) nw = lf_make(p, q, 1, drop);            /* first of phase p */
                else if (lf_taken(w) < lf_quota(w)) nw = w + 1 + (drop ? LF_DROP_ONE : 0);
                else break;                                          /* full */
                /* acq_rel: release passes this thread's writes (and, the CASes
                 * being one release sequence, its predecessors') to the leaf's
                 * filler; acquire gives a filler all of them. */
                if (atomic_compare_exchange_weak_explicit(&lv[i].w, &w, nw, memory_order_acq_rel,
                                                          memory_order_relaxed)) {
                    if (i != home) home_plus1 = i + 1; /* room was here: start here next time */
                    const int err = lf_taken(nw) == lf_quota(nw) /* we filled it */
                                        ? forward(b, lf_quota(nw), lf_drops(nw), last) : 0;
                    return err ? tok_error(err) : tok_make(*last ? p : checked_phase(r, p), ident);
                }
            }
        }
        if (newer) continue;
        if (locked) { /* an arrive_n is deciding: its unlock frees or fills */
            abar__pause();
            continue;
        }
        int err = none_free(b, p);
        if (err) return tok_error(err);
    }
}

/* Unlocks leaves [0, upto) that this thread locked (held[i] != 0): the full
 * ones first.  While we hold a leaf with a unit free the phase cannot
 * complete, so until the last store here no waiter can be released (and
 * free the barrier); after it, the caller touches the barrier only to
 * forward units it took, which the phase needs too. */
static void unlock_all(struct abar__leaf *lv, const uint64_t *held, uint32_t upto)
{
    /* release: the next CAS on the leaf sees what we did (and, through our
     * acquiring lock CAS, what the leaf's earlier arrivals did) */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < upto; i++) {
            const bool full = lf_taken(held[i]) == lf_quota(held[i]);
            if (held[i] && full == (pass == 0))
                atomic_store_explicit(&lv[i].w, held[i] & ~LF_LOCK, memory_order_release);
        }
}

/* n > 1 arrivals at once, all or nothing, on a barrier with leaves. */
abar_token_t abar__tree_arrive_n(struct abar_impl *b, uint32_t n, bool *last)
{
    *last = false;
    const uint64_t ident = b->ident;
    struct abar__leaf *lv = b->leaves;
    const uint32_t nl = abar__nleaves(b);
    struct abar__release *r = rel(b);
    uint64_t held[ABAR__TREE_LEAVES_MAX];
    for (;;) {
        const uint64_t p = atomic_load_explicit(&r->phase, memory_order_acquire);
        if (atomic_load_explicit(&r->futex, memory_order_relaxed) & ABAR__FUTEX_CANCELLED)
            return tok_cancelled();
        const uint32_t e = atomic_load_explicit(&b->expected, memory_order_relaxed);
        /* Lock every leaf with units at p, in index order. */
        uint32_t i, free_units = 0;
        bool newer = false;
        for (i = 0; i < nl && !newer; i++) {
            held[i] = 0;
            const uint32_t q = quota_of(e, nl, i);
            if (q == 0) continue;
            uint64_t w = atomic_load_explicit(&lv[i].w, memory_order_relaxed);
            for (;;) {
                if (w & LF_LOCK) { /* another arrive_n: it unlocks soon */
                    abar__pause();
                    w = atomic_load_explicit(&lv[i].w, memory_order_relaxed);
                    continue;
                }
                /* p still current after the load of w (as in arrive1) */
                if (atomic_load_explicit(&r->phase, memory_order_relaxed) != p) { newer = true; break; }
                const int32_t age = lf_age(w, p);
                if (age < 0) { newer = true; break; }
                const uint64_t nw = (age > 0 ? lf_make(p, q, 0, 0) : w) | LF_LOCK;
                /* acq_rel: we acquire the leaf's arrivals and will pass them on */
                if (atomic_compare_exchange_weak_explicit(&lv[i].w, &w, nw, memory_order_acq_rel,
                                                          memory_order_relaxed)) {
                    held[i] = nw;
                    free_units += lf_quota(nw) - lf_taken(nw);
                    break;
                }
            }
        }
        if (newer) {
            unlock_all(lv, held, i);
            continue;
        }
        if (free_units < n) { /* refused whole, or p is over */
            int err = 0;
            if (free_units > 0) {
                /* p is open (we hold a unit of it): more than it still
                 * expects.  Judged before the unlock, after which p may
                 * complete without us.  acquire: as in abar__snapshot. */
                uint64_t s = atomic_load_explicit(&b->state, memory_order_acquire);
                err = s & (ST_CANCELLED | ST_FINISHED) ? ECANCELED : EINVAL;
            }
            unlock_all(lv, held, nl);
            if (err == 0) err = none_free(b, p);
            if (err == 0) continue; /* p completed meanwhile: the next phase */
            return tok_error(err);
        }
        /* Take n units, leaf by leaf; forward the leaves we fill, at once. */
        uint32_t left = n, units = 0, drops = 0;
        for (i = 0; i < nl && left; i++) {
            if (!held[i]) continue;
            const uint32_t take = lf_quota(held[i]) - lf_taken(held[i]) < left
                                      ? lf_quota(held[i]) - lf_taken(held[i]) : left;
            if (take == 0) continue;
            held[i] += take;
            left -= take;
            if (lf_taken(held[i]) == lf_quota(held[i])) {
                units += lf_quota(held[i]);
                drops += lf_drops(held[i]);
            }
        }
        unlock_all(lv, held, nl);
        const int err = units ? forward(b, units, drops, last) : 0;
        return err ? tok_error(err) : tok_make(*last ? p : checked_phase(r, p), ident);
    }
}
