/*
 * abar.pml - a Promela model of the abar host protocol (src/core/: arrive.c,
 *  wait.c, lifecycle.c, hazard.c, futex.c,
 * abar_internal.h), checked exhaustively with Spin.  Every step below
 * names the C line it mirrors (model/show_refs.py prints each beside its line); when the
 * C changes, change the step beside its annotation.
 *
 * What is modelled.  Each C atomic operation on the barrier (a load, a store,
 * a CAS, a fetch-op) is one indivisible Promela step, so Spin explores every
 * interleaving of them between N participant threads (workers), a canceller
 * and an observer (a non-participant that waits with abar_current).  The
 * model is sequentially consistent; the C code's acquire/release argument is
 * written beside each atomic there, and checked on a weak-memory target only
 * by tests/ (see docs/reliability.md).  The futex is modelled as the kernel
 * gives it: FUTEX_WAIT compares and enqueues in one step, FUTEX_WAKE dequeues
 * every sleeper.  The release protocol since 177c88b: a completer changes
 * the futex word (its count bits, by CAS, keeping the cancel bit) only when
 * its release CAS found PARKED, then stores `phase` last; abar_cancel sets
 * the word's cancel bit and always wakes; spinners poll `phase` and the
 * cancel bit; a parker reads the word before its look and sleeps on that
 * value, and yields instead of parking when its look found the barrier
 * cancelled but the phase looked complete.  Every arrival reads `phase`
 * before its RMW (after it, a thread whose arrival did not complete the
 * phase may not touch the barrier).  abar_arrive_and_wait registers first
 * (enter), arrives, and waits only if its arrival did not complete the
 * phase and a read of `phase` does not show it released (since 3add362).
 * With PAIR, a single arrival on a barrier of two without a completion
 * function is one add of HALF: the second of a phase carries into the
 * phase bits, which counts it and opens the next phase at once, and then
 * publishes as a completer does; an add that should not have counted is
 * taken back.  AW_REGISTERED=1 checks the
 * arrival arrive_and_wait had at 4d5ff95.  With TREE, the barrier is a wide
 * one (tree.c): arrivals take units of two leaves by CAS, the one that fills
 * a leaf forwards it to the state word, an arrive_n locks the leaves, takes
 * its units all at once and unlocks the full leaves first; the completion
 * and release are the same code as without.  The leaf a thread tries first
 * is any leaf (every choice is explored), so the C's choice (the leaf where
 * the thread last found room) is one of the interleavings.  In the model a
 * thread learns that a phase ended only from the barrier, so no arrival
 * meets a leaf tagged with a phase after the one it read (lf_age's "newer"):
 * that path is taken only by an arrival racing the end of a phase it is
 * one too many for, which tests/core/test_core_tree.c exercises instead.
 *
 * Properties (each an assert below, plus Spin's invalid-end-state check):
 *   P1 no wait returns 0 before every arrival of its phase was counted, and
 *      the completion ran exactly once for it, before any release;
 *   P2 a token names the phase its arrival was counted in; abar__snapshot
 *      returns exactly the phase the state word names;
 *   P3 no lost wake-up: a parked (or spinning) waiter never stays blocked
 *      once its phase completes or the barrier is cancelled -- a waiter that
 *      sleeps forever leaves the system in an invalid end state, which Spin
 *      reports (futex_wait and the spin loop block instead of busy-looping,
 *      so a missed wake-up is a deadlock, not a silent cycle);
 *   P4 cancel releases everyone: every wait returns, with ECANCELED unless its
 *      phase completed, and no arrival is counted after the cancel;
 *   P5 destroy never overlaps a call in progress: after abar_destroy returns
 *      0 no thread touches the barrier memory (FUTEX_WAKE on the address is
 *      allowed, os_futex.c:19-25 abar__futex_wake_all); destroy is EBUSY while anyone is inside.
 *   P6 (liveness, checked separately: pan -DNP, ./pan -l -f, run_model.sh's
 *      `live`) every weakly fair execution terminates: there is no cycle
 *      in which some process runs for ever (a CAS retry loop, a waiter that
 *      yields on EBUSY or spins on a look that never settles) while each
 *      process that stays enabled takes its steps.  The model has no
 *      `progress` labels on purpose: every real progress step (an arrival
 *      counted, a phase opened or published, a call returning for good)
 *      changes a monotone variable, so no cycle can pass through one, and
 *      every cycle is a non-progress cycle.  The folded spin rounds and futex_wait
 *      block (above), so they form no cycle; once their condition holds it
 *      holds for good (phase, the cancel bits and FIN only grow), which weak
 *      fairness needs.  Not with SIGNALS=1: a signal storm (EINTR for ever)
 *      is a cycle the environment makes.
 *
 * Knobs (spin -DNAME=value): N workers (3), NPH phases (3), PBITS phase bits
 * in the state word (2: the 21-bit field wraps every 4 phases here, so the
 * wrap logic of abar__snapshot is exercised), OBSERVER (1), CANCELLER (1),
 * SIGNALS (0: 1 lets futex_wait return spuriously, as on EINTR; P3 is then
 * not checked, since a spurious return can mask a lost wake-up), SPLIT_FINAL
 * (0: 1 lets non-destroying workers use a split arrive + wait in the last
 * phase, which SPEC does not make safe against destroy: see reliability.md),
 * MUTANT (0: k>0 plants bug k, which the check must find; see run_model.sh.
 * 1 release before the state CAS, 2 no PARKED flag, 3 the completer never
 * wakes, 5 cancel does not change the futex word, 6 arrive_and_wait
 * registers after its arrival, 7 the completer does not bump the futex word
 * although PARKED, 8 (with PAIR) the carrying add publishes as if it had
 * not found PARKED: no bump, no wake; livelocks, for P6: 9 a refused single
 * arrival (with PAIR: a refused add) is never undone, 10 the completer's futex CAS retries with a stale value;
 * 11 (with AW_REGISTERED) the registered arrival computes its token with
 * the before-formula (arrival_phase) from its read after the RMW: wrong
 * once `phase` moved past the arrival's phase (P2); 12 arrive_and_wait's
 * check before it waits takes `phase` >= its token (not >) as released (P1);
 * 13 arrive_and_wait leaves right after its arrival, then reads `phase`
 * and waits as abar_wait does (registering again): its read after the RMW
 * is unregistered (P5); with TREE: 14 (with NARR) arrive_n unlocks the
 * partly filled leaves first: a leaf it locked full is stored after the
 * phase may have completed without it (P5); 15 a forward refused by cancel
 * is never taken back (the state word reads "completing" for ever: P3/P4);
 * 16 a single arrival does not skip a leaf locked by an arrive_n (whose
 * unlock then overwrites the unit: P3); 17 a leaf whose quota is 0 (drops
 * left fewer units than leaves) is not skipped, and its unit is never
 * forwarded (P3); with PAIR: 18 an add that takes pending to 0 without a
 * carry (a phase that expects one, or whose other arrival dropped) is
 * published as if it had carried: the phase is never reset (P1); 19 (with
 * PAIR) the second add of a barrier of one (a phase that expects one, no
 * drop) publishes as if it had not found PARKED: an observer parked
 * between the two adds sleeps for ever (P3).
 * Not planted: an add counted in a phase other than `before`, and a
 * completer that waits only for pending 0, not for its phase bits too:
 * both need two refused adds at once (a carry transient seen by another
 * add), which the model's participants, arriving once a phase, never make.
 * Number 4 is unused (no bug of that kind remains: the futex word's cancel
 * bit only hastens spinners, whose 1024th round looks anyway)),
 * ATOMIC_SNAPSHOT (0: 1 makes abar__snapshot one step, see there),
 * FIX_ARRIVAL_PHASE (1, as the C: abar_arrive and friends register for
 * the call, arrive.c:176 abar__enter, and take the token from `phase` read
 * after the RMW, arrive.c:155 abar__bracket_phase; 8fb3cd8 had fixed F1 by
 * reading `phase` before the RMW; 0: the code before 8fb3cd8, unregistered,
 * read after it, finding F1 in docs/reliability.md; with AW_REGISTERED,
 * arrive_and_wait's arrival reads after its RMW either way, as it may: see
 * arrive_registered),
 * AW_REGISTERED (0: arrive_and_wait's arrival is the one above,
 * arrive.c:186 abar__arrive1; 1: the registered arrival the core had at
 * 4d5ff95: the RMW alone, then `phase` read after it, never pair_last;
 * checked as a variant, should it come back),
 * FIX_CANCEL_WAKE (1, as lifecycle.c:154 abar__futex_wake_all since
 * 8fb3cd8: abar_cancel always wakes; 0: only when PARKED, finding F2),
 * FIX_CANCEL_PARK (1, as wait.c:177 ST_CANCELLED since 177c88b: a parker
 * whose look said "pending" on a cancelled state yields instead of
 * sleeping; 0: it parks, finding F4),
 * NO_ONLY (0: 1 leaves out the plain arrive without a wait in the last
 * phase, whose access after its counted arrival is a known finding),
 * PSHARED (0: waiters announce themselves in hazard slots, hazard.c; 1: in
 * the `inside` count, as process-shared barriers do),
 * FULL_MENU (0: 1 lets every worker choose every call pattern each phase),
 * PAIR (0: the barrier has a completion function, so every arrival takes
 * the general path; 1: it has none and expects N <= ABAR__PAIR_MAX = 2
 * threads, abar_internal.h:118 ABAR__TICKET, lifecycle.c:64 ABAR__TICKET:
 * a single arrival is one CAS that sets HALF,
 * abar_internal.h:311-347 abar__ticket_add, and the second of a phase
 * carries into the phase bits, which opens the next phase in that CAS;
 * an add of HALF from b03b267, a CAS from a judged state since 33d0f1c
 * (before b03b267, pair_last's one CAS); not with AW_REGISTERED),
 * TREE (0: the state word counts every arrival; 1: two leaves do, tree.c,
 * as for a private barrier of at least ABAR_TREE_MIN threads; not with PAIR
 * or AW_REGISTERED), NARR (0: every arrival is one; k >= 2: worker 1
 * arrives k at once, abar_arrive_n, split from its wait, and the barrier
 * expects N - 1 + k; with TREE that is tree.c's locking arrive_n).
 */

#ifndef N
#define N 3
#endif
#ifndef NPH
#define NPH 3
#endif
#ifndef PBITS
#define PBITS 2
#endif
#ifndef OBSERVER
#define OBSERVER 1
#endif
#ifndef CANCELLER
#define CANCELLER 1
#endif
#ifndef SIGNALS
#define SIGNALS 0
#endif
#ifndef SPLIT_FINAL
#define SPLIT_FINAL 0
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef FULL_MENU
#define FULL_MENU 0
#endif
#ifndef PSHARED
#define PSHARED 0
#endif
#ifndef FIX_ARRIVAL_PHASE
#define FIX_ARRIVAL_PHASE 1
#endif
#ifndef FIX_CANCEL_WAKE
#define FIX_CANCEL_WAKE 1
#endif
#ifndef FIX_CANCEL_PARK
#define FIX_CANCEL_PARK 1
#endif
#ifndef NO_ONLY
#define NO_ONLY 0
#endif
#ifndef ATOMIC_SNAPSHOT
#define ATOMIC_SNAPSHOT 0
#endif
#ifndef PAIR
#define PAIR 0
#endif
#ifndef AW_REGISTERED
#define AW_REGISTERED 0
#endif
#ifndef TREE
#define TREE 0
#endif
#ifndef NARR
#define NARR 0
#endif
#ifndef EXTRA
#define EXTRA 0
#endif
#if MUTANT == 11 && !AW_REGISTERED
#error MUTANT 11 is a bug of the arrival of AW_REGISTERED
#endif
#if PAIR && (N > 2 || !FIX_ARRIVAL_PHASE)
#error PAIR needs N <= 2 (ABAR__PAIR_MAX) and FIX_ARRIVAL_PHASE
#endif

#if TREE && PAIR
#error TREE and PAIR exclude each other (arrive.c:99 leaves: a barrier with leaves never takes the pair's add)
#endif
#if TREE && AW_REGISTERED
#error AW_REGISTERED is a variant of the flat arrival
#endif
#if PAIR && AW_REGISTERED
/* Its fetch-and-sub, mixed with the pair's adds of HALF, leaves a state of
 * one pending without a drop, which the add takes for a barrier of one. */
#error AW_REGISTERED is a variant of the general arrival (a pair's arrive_and_wait adds HALF)
#endif
#if NARR && (NARR < 2 || NO_ONLY || N < 2)
#error NARR: worker 1 arrives NARR >= 2 at once; it needs N >= 2 and the plain arrive (OP_ONLY) for its last phase
#endif
#if MUTANT >= 14 && MUTANT <= 17 && !TREE
#error MUTANT 14..17 are bugs of the arrival tree (TREE=1)
#endif
#if MUTANT == 14 && !NARR
#error MUTANT 14 is a bug of arrive_n (NARR)
#endif

/* The expected count at init: N workers, worker 1 arriving NARR at once. */
#if NARR
#define E0 (N - 1 + NARR)
#else
#define E0 N
#endif

#define NPROC (N + 3)
#define NPHA (NPH + 2)

#define EBUSY     16
#define EINVAL    22
#define EDEADLK   35
#define ETIMEDOUT 110
#define ECANCELED 125
#define OPEN      255   /* judge: the token's phase is the open one (wait.c:10 OPEN) */

/* The state word, abar_internal.h:4-14 pending and
 * abar_internal.h:64-76 ST_PENDING_BIAS, shrunk: pending with a
 * bias of 8 in 4 bits (it reads below 0 while refused arrivals are undone),
 * drops 3 bits, the flags, HALF, then PBITS of phase (the C: 22, 20, 3
 * flags, HALF, 18). */
#define BIAS        8
#define HALF        1024      /* a pair's first arrival, abar_internal.h:73 ST_HALF */
#define PEND(s)     (((s) & 15) - BIAS - (((s) >> 10) & 1))  /* abar_internal.h:79-82 st_pending */
#define DROPS(s)    (((s) >> 4) & 7)
#define DROP_ONE    16
#define PARKED      128
#define CANC        256
#define FIN         512
#define PSHIFT      11
#define PMASK       ((1 << PBITS) - 1)
#define STPH(s)     (((s) >> PSHIFT) & PMASK)
#define LO(p)       ((p) & PMASK)
#define SMASK       ((1 << (PSHIFT + PBITS)) - 1) /* a carry out of the phase bits is lost, as out of bit 63 */
#define MAKE(p, pend, fl) ((LO(p) << PSHIFT) | (fl) | ((pend) + BIAS))  /* abar_internal.h:86-89 st_make */
#define COMPLETING(s) (PEND(s) <= 0 && ((s) & FIN) == 0)               /* abar_internal.h:91-94 st_completing */
/* The 32-bit futex word (abar_internal.h:102 futex), shrunk to 8 bits: bit 7 is
 * ABAR__FUTEX_CANCELLED (bit 31, abar_internal.h:96 ABAR__FUTEX_CANCELLED, set by abar_cancel),
 * the low 7 bits count the releases that found PARKED (arrive.c:256-262 parked;
 * at most NPH of them here, so the count never wraps back to a value a
 * sleeper read). */
#define FUT_CANC    128
#define FUT_COUNT   127
#define INSIDE_DEAD 128           /* abar_internal.h:244 ABAR__INSIDE_DEAD */

/* ---- the barrier (struct abar_impl, abar_internal.h:131-158 abar_impl) ----
 * `phase` and `futex` are the release words (struct abar__release,
 * abar_internal.h:100-105 abar__release), which every access reaches through rel(b)
 * (abar_internal.h:168-171 rel): `pair` beside the state word or `wide` on a
 * line of its own, fixed at init (lifecycle.c:63 ABAR__PAIR), so either way
 * one pair of words; where they live makes no difference to the protocol.
 * What ABAR__TICKET does change, the add of HALF, is the PAIR knob. */
int  state = E0 + BIAS; /* MAKE(0, E0, 0): abar_init, lifecycle.c:68 st_make */
byte phase = 0;         /* completed phases (byte: NPH < 250), lifecycle.c:69,71 phase */
byte futex = 0;         /* lifecycle.c:70,72 futex */
byte inside = 0;        /* count (PSHARED) | INSIDE_DEAD */
byte expected = E0;
bool dead = 0;          /* magic == ABAR__MAGIC_DEAD, set by destroy */
bool slot[NPROC];       /* hazard.c: thread i announces this barrier */
bool fq[NPROC];         /* kernel futex queue: fq[i] = thread i sleeps */
#if TREE
/* The arrival tree (tree.c), TREE=1: NL = 2 leaves, one word each, packed
 * as in tree.c:18-22 LOCK (tree.c:65-70 LF_LOCK) and shrunk: taken 3
 * bits, quota 3, drops 3, LOCK, and a tag of TBITS = 3 bits (19 in the C, which leaves the same window for
 * "a later phase": tree.c:82-86 lf_age).  Set up at init tagged one phase
 * before the first (tree.c:135 lf_make). */
#define NL       2
#define TMASK    7
#define LT(w)    ((w) & 7)
#define LQ(w)    (((w) >> 3) & 7)
#define LD(w)    (((w) >> 6) & 7)
#define LDROP    64
#define LK       512
#define LTAG(w)  (((w) >> 10) & TMASK)
#define LMAKE(p, q, t, d) ((((p) & TMASK) << 10) | ((d) << 6) | ((q) << 3) | (t))  /* tree.c:75-79 lf_make */
#define NEWER    255
#define QUOTA(e, i) ((e) / NL + ((i) < (e) % NL -> 1 : 0))                        /* tree.c:90-93 quota_of */
int leaf[NL] = LMAKE(TMASK, 0, 0, 0);
#endif

/* ---- ghosts: what the spec says happened ---- */
byte gS = 0;               /* the phase the state word names (open phase) */
byte arrived[NPHA];        /* arrivals counted in phase p */
byte gdrops[NPHA];         /* drops counted in phase p */
byte gexp[NPHA];           /* expected count of phase p (p > 0; p = 0: N) */
byte compl[NPHA];          /* completions run for phase p */
bool released[NPHA];       /* the release of phase p (its `phase` store) happened */
bool gcancel = 0;          /* abar_cancel's fetch_or happened */
byte grefused = 0;         /* a pair's refused adds not yet taken back */
bool gfinished = 0;        /* the last drop's phase was opened */
byte wdone = 0;            /* workers (other than 0) that returned for good */
bool cdone = !CANCELLER, odone = !OBSERVER, edone = !EXTRA;
#define GEXP(p)    ((p) == 0 -> E0 : gexp[p])

/* Every access to barrier memory: never after a successful destroy (P5).
 * abar__live's load of magic (abar_internal.h:200 magic) is folded into the call's
 * next access: a destroy before either is caught by that access. */
#define ACCESS     assert(!dead)

/* abar__snapshot, abar_internal.h:207-221 abar__snapshot: read phase, state, phase again;
 * returns cur (completed phases) and a state naming cur or cur + 1.  With
 * ATOMIC_SNAPSHOT the three loads are one step; that is sound exactly when
 * the check below holds for the three-step version (the ATOMIC_SNAPSHOT=0
 * runs in run_model.sh). */
#if ATOMIC_SNAPSHOT
inline snapshot(res, sv)
{
    atomic { ACCESS; sv = state; res = phase }
}
#else
inline snapshot(res, sv)
{
    do
    :: atomic { ACCESS; ph1 = phase };                   /* abar_internal.h:211 phase */
       atomic { ACCESS; sv = state; gsr = gS; gtr = grefused }; /* abar_internal.h:213 state */
       atomic { ACCESS; ph2 = phase };                   /* abar_internal.h:216 phase */
       if
       :: ph2 == ph1 ->
          res = ph1;                                     /* abar_internal.h:216-218 cur */
          assert(gsr == res || gsr == res + 1);          /* P2: phase in {S-1, S} */
          assert(STPH(sv) == LO(gsr) || gtr > 0);        /* (a pair's refused add moves the bits until taken back) */
          ph1 = 0; ph2 = 0; gsr = 0; gtr = 0;                     /* dead: keep the state space small */
          break
       :: else -> skip
       fi
    od
}
#endif
/* P2 for a token from abar__bracket_phase (tmp = `phase` read after the
 * RMW, plus one): the phase counted in, unless 2^PBITS - 1 or more phases
 * completed since (a stall after the RMW); then a later phase with the same
 * low bits, never an earlier one, so a wait on it is never early (P1). */
#define BRACKET_OK assert(LO(tp) == LO(gph) && tp >= gph && (tp == gph || tmp - 1 - gph >= PMASK))
/* owned_phase (arrive.c): the phase a completer owns, from `phase` read
 * after its RMW (S-1 or S) and its state's low bits */
#define OWNED(ph, sv) (STPH(sv) == LO(ph) -> (ph) : (ph) + 1)
/* abar_internal.h:223-226 abar__state_phase */
#define STATE_PHASE(c, sv) (STPH(sv) == LO(c) -> (c) : (c) + 1)

/* wait.c:17-29 judge (EDEADLK needs a completion that waits: not modelled) */
inline judge(res, tk, c, sv)
{
    if
    :: tk < c -> res = 0                                             /* wait.c:19 `t.raw < cur` */
    :: tk >= c && tk > STATE_PHASE(c, sv) -> res = EINVAL            /* wait.c:21 EINVAL */
    :: tk >= c && tk < STATE_PHASE(c, sv) -> res = EBUSY             /* wait.c:22 EBUSY */
    :: tk >= c && tk == STATE_PHASE(c, sv) && (sv & FIN) -> res = ECANCELED /* wait.c:23 ST_FINISHED */
    :: tk >= c && tk == STATE_PHASE(c, sv) && !(sv & FIN) && (sv & CANC) && !COMPLETING(sv) ->
       res = ECANCELED                                               /* wait.c:26 ST_CANCELLED */
    :: else -> res = OPEN                                            /* wait.c:28 OPEN */
    fi
}
#define PENDING(r) ((r) == EBUSY || (r) == OPEN)                     /* wait.c:37 pending_result */

/* wait.c:31-35 look */
inline look(res, tk)
{
    snapshot(cur, s);
    judge(res, tk, cur, s)
}

/* os_futex.c:19-25 abar__futex_wake_all: touches only the address. */
inline futex_wake_all()
{
    d_step { i = 0; do :: i < NPROC -> fq[i] = 0; i++ :: else -> break od; i = 0 }
}

/* os_futex.c:29-39 abar__futex_wait (os_futex.c:32 FUTEX_WAIT_BITSET), called
 * with val and a deadline or none. */
inline futex_wait(res, val, tmd)
{
    atomic {                     /* the kernel: compare and enqueue at once */
        ACCESS;
        if
        :: futex == val -> fq[_pid] = 1
        :: else -> skip          /* EAGAIN: return 0, the caller re-checks */
        fi
    }
    res = 0;
    do
    :: fq[_pid] == 0 -> break                           /* woken (or EAGAIN) */
    :: tmd && fq[_pid] -> atomic { fq[_pid] = 0; res = ETIMEDOUT }; break
#if SIGNALS
    :: fq[_pid] -> fq[_pid] = 0; break                  /* EINTR: return 0 */
#endif
    od
}

/* wait.c:208-214 abar__block (with wait.h:42-47 lean_spin and wait.h:34-41
 * first_polls): wait.c:68-151 spin (unless told to park), then wait.c:162-205 park.
 * Returns in r. */
inline block(tk, tmd)
{
    /* The spin loop, wait.c:97-147 `for (unsigned i = 1`.  Its policy is a
     * free choice each round: ABAR_WAIT_PARK skips it (wait.c:87
     * ABAR_WAIT_PARK), the default leaves it when the budget is spent (and,
     * oversubscribed, after 4 yields per participant: any round,
     * wait.c:140-142 oversubscribed), ABAR_WAIT_SPIN never leaves it.  A
     * round reads `phase` (wait.c:102 released; the first 128 rounds,
     * wait.h:34-41 first_polls, in lean_spin, read only `phase`), then the
     * futex word's cancel bit (wait.c:107 ABAR__FUTEX_CANCELLED), and looks
     * (wait.c:109 look) when the bit is set or on every 1024th round
     * (wait.c:108 `i % 1024`).  A round whose loads find phase <= tk, the
     * bit clear, and (if it looks) the token still pending changes nothing
     * but the spinner's locals; such rounds are folded into one blocking step
     * that waits until a round can see news: `phase` past tk, the bit, or
     * CANCELLED or FINISHED in the state word (what the 1024th round's look
     * reports; FINISHED no release word shows).  A look that straddles that
     * moment reads the same values as one begun after it (it retries unless
     * `phase` held still).  So a spinner never released is a deadlock Spin
     * reports, not a silent cycle.  The fold also waits for `dead`: a
     * spinner polls the words until it leaves, so a destroy under it is
     * caught (P5) by the round's first access. */
    do
    :: atomic { ACCESS; phase > tk || (futex & FUT_CANC) || (state & (CANC | FIN)) || dead || EXTRA && tmd } ->
       atomic { ACCESS; tmp = phase };                   /* wait.h:37 released, wait.c:102 released */
       if
       :: tmp > tk -> r = 0; goto blockdone
       :: else -> skip
       fi;
       atomic { ACCESS; tmp = futex };                   /* wait.c:105 futex */
       if
       :: skip ->                                        /* wait.c:107-108 ABAR__FUTEX_CANCELLED: the cancel bit, or i % 1024 == 0 */
          tmp = 0;
          look(r, tk);                                   /* wait.c:109 look */
          if :: !PENDING(r) -> goto blockdone :: else -> skip fi
       :: !(tmp & FUT_CANC) -> tmp = 0                   /* no bit, not a 1024th round */
       fi
    :: tmd ->                                            /* wait.c:118-121 deadline: one more look */
       look(r, tk);
       r = (PENDING(r) -> ETIMEDOUT : r);
       goto blockdone
    :: break                                             /* wait.c:87 ABAR_WAIT_PARK, wait.c:143 PARK: park */
    od;
    /* The park loop, wait.c:169-204 `for (;;)`. */
    do
    :: atomic { ACCESS; v = futex };                     /* wait.c:174 futex: the word before the look */
       look(r, tk);                                      /* wait.c:175 look */
       if :: !PENDING(r) -> goto blockdone :: else -> skip fi;
       if :: tmd -> r = ETIMEDOUT; goto blockdone :: skip fi; /* wait.c:176 deadline */
       if
       :: r == EBUSY -> goto parkagain                   /* wait.c:176-179 sched_yield */
#if FIX_CANCEL_PARK
       :: r != EBUSY && (s & CANC) -> goto parkagain     /* wait.c:175-178 ST_CANCELLED: cancelled, looked complete: yield */
#endif
       :: else -> skip
       fi;
#if MUTANT == 2
       /* bug 2: sleep without announcing PARKED */
#else
       if
       :: !(s & PARKED) ->                               /* wait.c:186-191 ST_PARKED */
          atomic {
              ACCESS;
              if
              :: state == s -> state = s | PARKED; ok = 1
              :: else -> s = state; ok = 0
              fi
          };
          if :: !ok -> goto parkagain :: else -> skip fi
       :: else -> skip
       fi;
#endif
       futex_wait(r, v, tmd);                            /* wait.c:193 abar__futex_wait */
       if
       :: r == ETIMEDOUT ->
          look(r, tk);                                   /* wait.c:196 look */
          r = (PENDING(r) -> ETIMEDOUT : r);             /* wait.c:195 ETIMEDOUT */
          goto blockdone
       :: else -> skip
       fi;
parkagain:
       v = 0
    od;
blockdone:
    cur = 0; s = 0; ok = 0; tmp = 0; v = 0
}

/* enter, abar_internal.h:462-495 abar__enter: announce, then wait out a destroy's mark.
 *
 * The hazard-slot fences (hazard.c:11-23 fence).  The C orders the slot store
 * before the waiter's next loads with a "light" fence
 * (abar_internal.h:442 abar__hazard_fence_light, abar_internal.h:423-427
 * abar__hazard_fence_light: only a compiler barrier where membarrier is
 * registered) and destroy's mark before its slot loads with a "heavy" one
 * (lifecycle.c:100 abar__hazard_fence_heavy, hazard.c:45-50
 * abar__hazard_fence_heavy: membarrier PRIVATE_EXPEDITED, then a seq_cst
 * fence).  The model is sequentially consistent, i.e. it assumes a
 * full fence on both sides; that is sound for the asymmetric pair because
 * the pair gives the same guarantee for this store-load (Dekker) pattern:
 * membarrier returns only after every running thread of the process has
 * executed a full fence, and a thread not running has been switched out
 * (which fences), so each waiter's program order (slot store, then its
 * loads of `inside`/the words, which the compiler barrier keeps in that
 * order) is cut at one point by a full fence that is ordered against
 * destroy's seq_cst fence.  Cut before the slot store or between the store
 * and the loads: the loads come after and see the mark; cut after the
 * loads: the store came before and destroy's scan sees the slot.  Either way
 * one sees the other -- exactly the outcomes of the interleavings below
 * (slot store and the `inside` load are separate steps, interleaved freely
 * with destroy's mark and scan).  Without membarrier both sides are seq_cst
 * fences, the classic pair. */
inline enter()
{
#if PSHARED
    /* abar__enter, counted: a CAS that never counts into a marked word;
     * while destroy's mark is there, wait for its verdict */
    do
    :: atomic { ACCESS; !(inside & INSIDE_DEAD) -> inside++; entered = 1 }; break
    :: atomic { (inside & INSIDE_DEAD) && dead } ->      /* destroyed: wrote nothing */
       entered = 0; break
    od
#else
    atomic { ACCESS; slot[_pid] = 1 };                   /* abar__enter: slot_push, light fence */
    entered = 1;
    do
    :: atomic { ACCESS; !(inside & INSIDE_DEAD) } -> break /* no destroy's mark */
    :: atomic { (inside & INSIDE_DEAD) && dead } ->      /* destroyed */
       entered = 0; break
    od;
    if
    :: !entered -> slot[_pid] = 0                         /* abar__leave */
    :: else -> skip
    fi
#endif
}

/* leave, abar_internal.h:499-507 abar__leave: after it this thread touches the barrier no more. */
inline leave()
{
#if PSHARED
    atomic { ACCESS; inside-- }                          /* abar_internal.h:502 inside */
#else
    atomic { ACCESS; slot[_pid] = 0 }                    /* abar_internal.h:505 slot_pop */
#endif
}

/* wait.c:217-224 wait_registered (the caller, wait.c:226-251 wait_common, found the token
 * not yet complete on the release words, wait.c:235 done). */
inline wait_registered(tk, tmd)
{
    enter();                                             /* wait.c:220 abar__enter */
    assert(entered);                                     /* no destroy races these waits */
    block(tk, tmd);                                      /* wait.c:221 abar__block */
    leave()                                              /* wait.c:222 abar__leave */
}

/* What a returned wait may say (P1, P4). */
inline check_wait(tk, res, tmd)
{
    if
    :: res == 0 -> assert(released[tk] && compl[tk] == 1 && arrived[tk] == GEXP(tk)) /* P1 */
    :: res == ECANCELED -> assert(gcancel || gfinished)  /* P4 */
    :: res == ETIMEDOUT -> assert(tmd)
    :: else -> assert(0)                                 /* EINVAL, EBUSY: never for these tokens */
    fi
}

/* publish, arrive.c:248-266 abar__publish: release the waiters of phase p after the
 * release CAS on `state`, which found PARKED if prk.  Only then the futex
 * word changes: its count bits, by CAS, keeping the cancel bit (a cancel may
 * set it meanwhile).  Uses tmp (the caller's is dead by now). */
inline publish(p, prk)
{
#if MUTANT == 7
    /* bug 7: the futex word is not changed although PARKED */
#else
    if
    :: prk ->                                            /* arrive.c:256 parked */
       atomic { ACCESS; tmp = futex };                   /* arrive.c:258 `uint32_t f` */
       do                                                /* arrive.c:259-261 atomic_compare_exchange_weak_explicit */
       :: atomic {
              ACCESS;
              if
              :: futex == tmp ->
                 futex = (tmp & FUT_CANC) | ((tmp + 1) & FUT_COUNT); ok = 1
              :: else ->
#if MUTANT == 10
                 ok = 0                          /* bug 10: retry with the stale value */
#else
                 tmp = futex; ok = 0
#endif
              fi
          };
          if :: ok -> break :: else -> skip fi
       od;
       tmp = 0
    :: else -> skip
    fi;
#endif
    if
    :: areg -> leave(); areg = 0                         /* abar__before_release */
    :: else -> skip
    fi;
#if MUTANT != 1
    atomic { ACCESS; phase = p + 1; released[p] = 1 };   /* arrive.c publish: the last access */
#endif
#if MUTANT == 3
    skip                                                 /* bug 3: never wake */
#else
    if
    :: prk -> futex_wake_all()                           /* arrive.c:265 abar__futex_wake_all */
    :: else -> skip
    fi
#endif
}

/* arrive.c:196-236 abar__complete, for phase p whose last arrival made ns
 * (bug 1 stores `phase` before the state CAS; publish then leaves it out). */
inline complete(p, ns)
{
#if MUTANT != 25
    atomic { ACCESS; phase == p };                       /* arrive.c complete: publish in order, first */
#endif
    atomic {                                             /* arrive.c complete: the completion */
        ACCESS;
        assert(arrived[p] == GEXP(p));                   /* P1: every arrival counted */
        assert(!released[p]);                            /* P1: before any release */
        assert(phase == p);                              /* abar_phase inside it: the completing phase */
        compl[p]++;
        assert(compl[p] == 1)                            /* P1: exactly once */
    };
    atomic { ACCESS; next = expected - DROPS(ns) };      /* arrive.c complete */
    if
    :: DROPS(ns) -> atomic { ACCESS; expected = next }
    :: else -> skip
    fi;
#if MUTANT == 25
    atomic { ACCESS; phase == p };                       /* bug 25: the order of before: completion first */
#endif
#if MUTANT == 1
    atomic { ACCESS; phase = p + 1; released[p] = 1 };   /* bug 1: release before the state CAS */
#endif
    atomic { ACCESS; cur_s = state };                    /* arrive.c:217 cur */
    do                                                   /* arrive.c:224-233 `for (;;)` */
    :: atomic {
           ACCESS;
           if
           :: PEND(cur_s) != 0 || STPH(cur_s) != LO(p) -> cur_s = state; ok = 0 /* arrive.c:225-227 st_pending: an undo pending */
           :: PEND(cur_s) == 0 && STPH(cur_s) == LO(p) && state == cur_s -> /* arrive.c:228-232 st_make */
              state = MAKE(p + 1, next, (cur_s & CANC) | (next == 0 -> FIN : 0));
              gS = p + 1;
              gexp[p + 1] = GEXP(p) - gdrops[p];
              assert(gexp[p + 1] == next);               /* expected tracks drops */
              if :: next == 0 -> gfinished = 1 :: else -> skip fi;
              ok = 1
           :: PEND(cur_s) == 0 && STPH(cur_s) == LO(p) && state != cur_s -> cur_s = state; ok = 0
           fi
       };
       if :: ok -> break :: else -> skip fi
    od;
    publish(p, (cur_s & PARKED));                        /* arrive.c:234 abar__publish */
    cur_s = 0; next = 0; ok = 0
}

#if PAIR
/* A pair's single arrival (PAIR: the barrier expects 2 and has no
 * completion function: ABAR__TICKET, lifecycle.c), abar__ticket_add and
 * abar__ticket_slow (abar_internal.h, arrive.c): one CAS from a state it
 * has judged, so a refused arrival changes nothing.  From the state s:
 * cancelled or finished: ECANCELED; nothing pending (a drop's completion
 * running): EINVAL; 2 pending, no drop: set HALF (the first of two), or
 * with HALF: carry into the phase bits (the phase completes and the next
 * opens in that CAS); 1 pending, no drop (a barrier of one): add one to
 * the phase bits; with drops: take one from pending (0: complete the
 * general way).  A CAS that completes phase S is taken only once `phase`
 * shows S-1 published (owned_phase then names S from the low bits).  The
 * inline fast path is the first two cases from the state `before` names,
 * a subset of these steps.  Token in tp, r = error, lst = completed. */
#define TBASE(s)   ((s) & ~((PMASK << PSHIFT) | PARKED))
inline ticket_arrive()
{
    atomic { ACCESS; s = state };                        /* abar_internal.h ticket_add: v */
    do
    :: (s & (CANC | FIN)) -> r = ECANCELED; break        /* arrive.c ticket_slow */
    :: !(s & (CANC | FIN)) && PEND(s) < 1 -> r = EINVAL; break
    :: !(s & (CANC | FIN)) && PEND(s) >= 1 ->
       if
       :: TBASE(s) == BIAS + 2 || TBASE(s) == BIAS + 2 + HALF -> ns = (s + HALF) & SMASK
       :: TBASE(s) == BIAS + 1 -> ns = (s + (1 << PSHIFT)) & SMASK
       :: else -> ns = s - 1
       fi;
#if MUTANT == 20
       /* bug 20: a completing CAS does not wait for the previous release */
       if :: true -> skip fi;
#else
       atomic {                                          /* arrive.c: publish order */
           ACCESS;
           if
           :: (STPH(ns) != STPH(s) || PEND(ns) == 0) && STPH(s) != LO(phase) -> ok = 0; s = state
           :: else -> ok = 1
           fi
       };
       if :: !ok -> goto ticketagain :: else -> skip fi;
#endif
       atomic {                                          /* the CAS, acq_rel */
           ACCESS;
           if
           :: state == s ->
              state = ns; ok = 1;
              assert(!gcancel);                          /* P4: nothing counted after cancel */
              arrived[gS] = arrived[gS] + 1; gph = gS;
              if
              :: STPH(ns) != STPH(s) ->                  /* the carry completes gS */
                 assert(arrived[gS] == GEXP(gS) && !released[gS]);
                 compl[gS]++;
                 assert(compl[gS] == 1);
                 assert(gdrops[gS] == 0);
                 gexp[gS + 1] = GEXP(gS);
                 assert(gexp[gS + 1] == expected);
                 gS = gS + 1
              :: else -> skip
              fi
           :: else -> s = state; ok = 0
           fi
       };
       if :: ok -> r = 0; break :: else -> skip fi;
ticketagain:
       skip
    od;
    if
    :: r == 0 && STPH(ns) != STPH(s) ->                  /* arrive.c ticket_release_wrapped */
       atomic { ACCESS; tp = OWNED(phase, s); assert(tp == gph) };
       atomic { ACCESS; phase == tp };                   /* the previous release first */
#if MUTANT == 8 || MUTANT == 19
       publish(tp, 0);                                   /* bug 8 (19): the carry ignores PARKED */
#else
       if
       :: (s & PARKED) -> atomic { ACCESS; state = state & ~PARKED }
       :: else -> skip
       fi;
       publish(tp, (s & PARKED));
#endif
       lst = 1
    :: r == 0 && STPH(ns) == STPH(s) && PEND(ns) == 0 ->
       atomic { ACCESS; tp = OWNED(phase, ns); assert(tp == gph) }; /* arrive.c owned_phase */
#if MUTANT == 18
       publish(tp, (s & PARKED));                        /* bug 18: published as if it had carried */
#else
       complete(tp, ns);
#endif
       lst = 1
    :: r == 0 && STPH(ns) == STPH(s) && PEND(ns) > 0 ->
       atomic {                                          /* abar__bracket_phase, read after */
           ACCESS; tmp = phase + 1;
           tp = tmp - ((tmp - STPH(s)) & PMASK);
           BRACKET_OK
       }
    :: else -> skip
    fi;
    gph = 0; tmp = 0
}

#if MUTANT == 23
/* bug 23: the pair's arrival before it was a CAS (one add of HALF, taken
 * back when refused): under anonymous arrivals a refused add's transient
 * HALF lets another arrival complete a phase with one real arrival. */
/* A pair's single arrival (PAIR: the barrier expects N <= ABAR__PAIR_MAX = 2
 * threads and has no completion function: ABAR__TICKET, lifecycle.c:64
 * ABAR__TICKET), as the C was before 33d0f1c:
 * abar_internal.h@ddb2080:256-277 abar__ticket_add and
 * abar_internal.h@ddb2080:279-289 abar__ticket_arrive with
 * arrive.c@ddb2080:31-65 abar__ticket_slow: one add of HALF; the second
 * arrival of a phase carries out of HALF into the phase bits, which completes the phase and opens the
 * next in that add.  Refused (cancelled, finished, nothing left, or a phase
 * other than `before`): taken back by a subtraction.  tmp holds `before`
 * (abar_internal.h@ddb2080:259 phase); token in tp, r = error, lst =
 * completed the phase.  The inline fast path
 * (abar_internal.h@ddb2080:263-276 ST_HALF) is the two usual outcomes of
 * the same add: the first of two, and the carry without PARKED. */
inline ticket_arrive_old()
{
    atomic {                                             /* abar_internal.h@ddb2080:263 ST_HALF: fetch_add HALF */
        ACCESS; s = state; state = (state + HALF) & SMASK; ns = state;
        if
        :: !(s & (CANC | FIN)) && PEND(s) >= 1 && STPH(s) == LO(tmp) ->
           assert(!gcancel);                             /* P4: nothing counted after cancel */
           assert(tmp == gS);                            /* P2: `before` is the phase counted in */
           arrived[gS] = arrived[gS] + 1;
           if
           :: PEND(s) == 1 && (s & HALF) ->              /* the carry: no completion function, */
              assert(arrived[gS] == GEXP(gS) && !released[gS]); /* so the phase completes here */
              compl[gS]++;
              assert(compl[gS] == 1);
              assert(gdrops[gS] == 0);                   /* a carry finds no drop (abar_internal.h@ddb2080:236-239 drop) */
              gexp[gS + 1] = GEXP(gS);
              assert(gexp[gS + 1] == expected);          /* the next phase's count is this one's */
              gS = gS + 1
           :: else -> skip
           fi
        :: else -> grefused++
        fi
    };
    if
    :: (s & (CANC | FIN)) || PEND(s) < 1 || STPH(s) != LO(tmp) -> /* arrive.c@ddb2080:34 before */
#if MUTANT == 9
       skip;                                             /* bug 9: the refused add is never taken back */
#else
       atomic { ACCESS; state = (state - HALF) & SMASK; grefused-- }; /* arrive.c@ddb2080:37 ST_HALF */
#endif
       r = ((s & (CANC | FIN)) -> ECANCELED : EINVAL)    /* arrive.c@ddb2080:38 ECANCELED */
    :: else ->
       r = 0; tp = tmp;
       if
#if MUTANT == 18
       :: PEND(s) == 1 -> publish(tp, (s & PARKED)); lst = 1 /* bug 18: every last add taken for a carry */
#else
       :: PEND(s) == 1 && s == MAKE(tp, 1, 0) ->         /* arrive.c@ddb2080:43-50 st_make: a phase that expects one */
          atomic {                                       /* arrive.c@ddb2080:50 ST_HALF: a second add carries */
              ACCESS; ns = state; state = (state + HALF) & SMASK;
              assert(arrived[tp] == GEXP(tp) && !released[tp]);
              compl[tp]++;
              assert(compl[tp] == 1);
              gexp[tp + 1] = GEXP(tp);                   /* no drop: the same count */
              assert(gexp[tp + 1] == expected);
              gS = tp + 1
          };
#if MUTANT == 19
          publish(tp, 0);                                /* bug 19: the second add ignores PARKED */
#else
          if
          :: (ns & PARKED) -> atomic { ACCESS; state = state & ~PARKED } /* arrive.c@ddb2080:62 ST_PARKED */
          :: else -> skip
          fi;
          publish(tp, (ns & PARKED));                    /* arrive.c@ddb2080:63 abar__publish */
#endif
          lst = 1
       :: PEND(s) == 1 && !(s & HALF) && s != MAKE(tp, 1, 0) -> complete(tp, ns); lst = 1 /* arrive.c@ddb2080:51-55 abar__complete */
       :: PEND(s) == 1 && (s & HALF) ->                  /* arrive.c@ddb2080:57-63 carried */
#if MUTANT == 8
          publish(tp, 0);                                /* bug 8: the carry ignores PARKED */
#else
          if
          :: (s & PARKED) -> atomic { ACCESS; state = state & ~PARKED } /* arrive.c@ddb2080:62 ST_PARKED */
          :: else -> skip
          fi;
          publish(tp, (s & PARKED));                     /* arrive.c@ddb2080:63 abar__publish */
#endif
          lst = 1
#endif
       :: else -> skip
       fi
    fi
}
#endif
#endif

#if TREE
/* tree.c:82-86 lf_age: how many phases the leaf's tag is behind p, or
 * NEWER (the C's -1: p has completed). */
inline lf_age(res, wv, p)
{
    res = ((p) - LTAG(wv)) & TMASK;
    if :: res >= (TMASK >> 1) -> res = NEWER :: else -> skip fi
}

/* tree.c:201-219 forward: the leaf (or leaves) this thread filled go to
 * the state word in one fetch_add: units off pending, drops on.  Refused
 * (cancelled) it is taken back (bug 15: never).  The forward that takes
 * pending to 0 completes phase pp. */
inline forward(units, drps)
{
    atomic {                                             /* tree.c:207 atomic_fetch_add_explicit */
        ACCESS; s = state; state = state + (drps) * DROP_ONE - (units); ns = state;
        if
        :: !(s & (CANC | FIN)) && PEND(s) >= (units) ->
           assert(!gcancel);                             /* P4: nothing counted after cancel */
           assert(pp == gS)                              /* P2: the leaf was of the open phase */
        :: else -> skip
        fi
    };
    if
    :: (s & (CANC | FIN)) || PEND(s) < (units) ->        /* tree.c:208 ST_CANCELLED */
#if MUTANT == 15
       skip                                              /* bug 15: the refused forward stays */
#else
       atomic { ACCESS; state = state - ((drps) * DROP_ONE - (units)) } /* tree.c:211 atomic_fetch_sub_explicit */
#endif
    :: else ->
       if
       :: PEND(ns) == 0 -> complete(pp, ns); lst = 1     /* tree.c:214-215 abar__complete */
       :: else -> skip
       fi
    fi
}

/* tree.c:223-234 none_free: no unit was free at phase p.  res: a verdict,
 * or 0 to look again. */
inline none_free(res, p)
{
    atomic { ACCESS; s = state };                        /* tree.c:226 state */
    if
    :: s & (CANC | FIN) -> res = ECANCELED               /* tree.c:227 ECANCELED */
    :: else ->
       atomic { ACCESS; tmp = phase };                   /* tree.c:228 phase */
       if
       :: tmp != (p) -> res = 0
       :: tmp == (p) && STPH(s) != LO(p) -> res = 0      /* tree.c:229-232 st_phase: not yet published */
       :: tmp == (p) && STPH(s) == LO(p) -> res = EINVAL /* tree.c:233 EINVAL */
       fi;
       tmp = 0
    fi;
    s = 0
}

/* tree.c:247-303 abar__tree_arrive1: one arrival (a drop if drp).  The
 * leaf tried first is any leaf: the C's (tree.c:186-195 home_leaf, and
 * tree.c:288 home_plus1) depends on the thread's history, so every choice is explored.
 * The ghosts count the arrival at the CAS that takes its unit. */
inline tree_arrive1(drp)
{
    if :: hl = 0 :: hl = 1 fi;                           /* tree.c:253 home_leaf */
    do
    :: atomic { ACCESS; pp = phase };                    /* tree.c:259 phase */
       atomic { ACCESS; tmp = futex };                   /* tree.c:260 futex */
       if
       :: tmp & FUT_CANC -> tmp = 0; r = ECANCELED; goto tree1done /* tree.c:261 tok_cancelled */
       :: else -> tmp = 0
       fi;
       atomic { ACCESS; e = expected };                  /* tree.c:262 expected */
       locked = 0; newer = 0; j = hl; kk = 0;
       do                                                /* tree.c:265 `for (uint32_t k = 0` */
       :: kk < NL && !newer ->
          q = QUOTA(e, j);                               /* tree.c:266 quota_of */
          if
#if MUTANT == 17
          :: true ->                                     /* bug 17: a leaf with no unit is not skipped */
#else
          :: q > 0 ->                                    /* tree.c:267 `q == 0` */
#endif
             atomic { ACCESS; w = leaf[j] };             /* tree.c:268 `lv[i].w` */
             do
             :: lf_age(age, w, pp);                      /* tree.c:277 lf_age */
#if MUTANT != 16
                if :: w & LK -> locked = 1; break :: else -> skip fi; /* tree.c:278 LF_LOCK */
#endif
                if :: age == NEWER -> newer = 1; break :: else -> skip fi; /* tree.c:279 `age < 0` */
                if
                :: age > 0 -> nw = LMAKE(pp, q, 1, drp)  /* tree.c:280 lf_make: first of phase pp */
                :: age == 0 && LT(w) < LQ(w) -> nw = w + 1 + ((drp) -> LDROP : 0) /* tree.c:281 LF_DROP_ONE */
                :: age == 0 && LT(w) >= LQ(w) -> break   /* tree.c:282 break: full */
                fi;
                atomic {                                 /* tree.c:286 atomic_compare_exchange_weak_explicit */
                    ACCESS;
                    if
                    :: leaf[j] == w ->
                       leaf[j] = nw; ok = 1;
                       assert(pp == gS);                 /* P2: the unit is of the open phase */
                       arrived[gS] = arrived[gS] + 1;
                       gdrops[gS] = gdrops[gS] + ((drp) -> 1 : 0)
                    :: else -> w = leaf[j]; ok = 0
                    fi
                };
                if
                :: ok ->
                   if
                   :: LT(nw) == LQ(nw) -> forward(LQ(nw), LD(nw)) /* tree.c:289-290 forward */
                   :: else -> skip
                   fi;
                   tp = pp; r = 0; goto tree1done        /* tree.c:291 tok_make */
                :: else -> skip
                fi
             od
          :: else -> skip
          fi;
          kk++; j = (j + 1 == NL -> 0 : j + 1)
       :: else -> break
       od;
       if
       :: newer -> skip                                  /* tree.c:295 newer */
       :: !newer && locked -> skip                       /* tree.c:296-299 locked */
       :: !newer && !locked ->
          none_free(err, pp);                            /* tree.c:300 none_free */
          if :: err -> r = err; goto tree1done :: else -> skip fi /* tree.c:301 tok_error */
       fi
    od;
tree1done:
    pp = 0; e = 0; q = 0; hl = 0; j = 0; kk = 0; age = 0; w = 0; nw = 0;
    locked = 0; newer = 0; err = 0; ok = 0; s = 0; ns = 0
}

/* tree.c:310-320 unlock_all: leaves [0, upto) this thread locked, the
 * full ones first, the partly filled last (bug 14: the other way round). */
#if MUTANT == 14
#define PASS_FULL 1
#else
#define PASS_FULL 0
#endif
inline unlock_all(upto)
{
    lim = upto; pass = 0;
    do
    :: pass < 2 ->
       j = 0;
       do
       :: j < lim ->
          if
          :: held[j] != 0 && ((LT(held[j]) == LQ(held[j])) == (pass == PASS_FULL)) ->
             atomic { ACCESS; leaf[j] = held[j] - LK }   /* tree.c:318 LF_LOCK */
          :: else -> skip
          fi;
          j++
       :: else -> break
       od;
       pass++
    :: else -> break
    od;
    lim = 0; pass = 0; j = 0
}

/* tree.c:323-400 abar__tree_arrive_n: n > 1 arrivals, all or nothing.
 * The ghosts count them when they are decided (every leaf with units
 * locked, so the phase cannot end before the unlocks). */
inline tree_arrive_n(n)
{
    do
    :: atomic { ACCESS; pp = phase };                    /* tree.c:332 phase */
       atomic { ACCESS; tmp = futex };                   /* tree.c:333 futex */
       if
       :: tmp & FUT_CANC -> tmp = 0; r = ECANCELED; goto treendone /* tree.c:334 tok_cancelled */
       :: else -> tmp = 0
       fi;
       atomic { ACCESS; e = expected };                  /* tree.c:335 expected */
       fu = 0; newer = 0; j = 0;
       do                                                /* tree.c:339 `for (i = 0`: lock, in index order */
       :: j < NL && !newer ->
          held[j] = 0; q = QUOTA(e, j);                  /* tree.c:340-341 quota_of */
          if
          :: q > 0 ->
             atomic { ACCESS; w = leaf[j] };             /* tree.c:343 `lv[i].w` */
             do
             :: w & LK ->                                /* tree.c:345-349 LF_LOCK, folded: wait for the unlock */
                atomic { (!(leaf[j] & LK) || dead) -> ACCESS; w = leaf[j] }
             :: !(w & LK) ->
                lf_age(age, w, pp);                      /* tree.c:352 lf_age */
                if :: age == NEWER -> newer = 1; break :: else -> skip fi; /* tree.c:353 `age < 0` */
                nw = (age > 0 -> LMAKE(pp, q, 0, 0) : w) | LK; /* tree.c:354 LF_LOCK */
                atomic {                                 /* tree.c:356 atomic_compare_exchange_weak_explicit */
                    ACCESS;
                    if
                    :: leaf[j] == w -> leaf[j] = nw; ok = 1
                    :: else -> w = leaf[j]; ok = 0
                    fi
                };
                if
                :: ok -> held[j] = nw; fu = fu + LQ(nw) - LT(nw); break /* tree.c:358-360 free_units */
                :: else -> skip
                fi
             od
          :: else -> skip
          fi;
          j++
       :: else -> break
       od;
       if
       :: newer -> unlock_all(j)                         /* tree.c:364-367 unlock_all */
       :: !newer && fu < (n) ->                          /* tree.c:368 free_units: refused, or pp is over */
          err = 0;
          if
          :: fu > 0 ->
             atomic { ACCESS; s = state };               /* tree.c:374 state */
             err = ((s & (CANC | FIN)) -> ECANCELED : EINVAL); s = 0
          :: else -> skip
          fi;
          unlock_all(NL);                                /* tree.c:377 unlock_all */
          if :: err == 0 -> none_free(err, pp) :: else -> skip fi; /* tree.c:378 none_free */
          if :: err -> r = err; goto treendone :: else -> skip fi  /* tree.c:379-380 err */
       :: !newer && fu >= (n) ->
          lft = (n); units = 0; drps = 0; j = 0;
          do                                             /* tree.c:384-395 take: take n units */
          :: j < NL && lft > 0 ->
             if
             :: held[j] != 0 ->
                take = LQ(held[j]) - LT(held[j]);
                if :: take > lft -> take = lft :: else -> skip fi;
                if
                :: take > 0 ->
                   held[j] = held[j] + take; lft = lft - take;
                   if
                   :: LT(held[j]) == LQ(held[j]) -> units = units + LQ(held[j]); drps = drps + LD(held[j])
                   :: else -> skip
                   fi
                :: else -> skip
                fi
             :: else -> skip
             fi;
             j++
          :: else -> break
          od;
          atomic {                                       /* ghost: the n arrivals are decided */
              assert(pp == gS);                          /* P2 */
              arrived[gS] = arrived[gS] + (n)
          };
          unlock_all(NL);                                /* tree.c:396 unlock_all */
          if :: units > 0 -> forward(units, drps) :: else -> skip fi; /* tree.c:397 forward */
          tp = pp; r = 0; goto treendone                 /* tree.c:398 tok_make */
       fi
    od;
treendone:
    pp = 0; e = 0; q = 0; j = 0; age = 0; w = 0; nw = 0; newer = 0; err = 0; ok = 0;
    fu = 0; lft = 0; units = 0; drps = 0; take = 0; s = 0; ns = 0;
    held[0] = 0; held[1] = 0
}
#endif

/* arrive.c:95-158 arrive_live (abar_arrive and the others reach it through
 * arrive.c:171-184 arrive, arrive_and_wait through arrive.c:186 abar__arrive1):
 * n arrivals (a drop if drp); token in tp, r = error, lst = this call
 * completed the phase (*last). */
inline arrive(n, drp)
{
    lst = 0;
#if TREE
    if
    :: (n) == 1 -> tree_arrive1(drp)                     /* arrive.c:99-100 abar__tree_arrive1 */
    :: else -> tree_arrive_n(n)
    fi
#else
    if
    :: (n) == 1 && !(drp) ->                             /* arrive.c arrive_live */
#if PAIR && MUTANT == 23
       ticket_arrive_old(); goto arrivedone;
#elif PAIR
       ticket_arrive(); goto arrivedone;                 /* arrive.c arrive_live */
#endif
       atomic {                                          /* arrive.c:109 atomic_fetch_sub_explicit */
           ACCESS; s = state; state = state - 1; ns = s - 1;
           if
           :: !(s & (CANC | FIN)) && PEND(s) >= 1 ->
              assert(!gcancel);                          /* P4: nothing counted after cancel */
              arrived[gS] = arrived[gS] + 1; gph = gS
           :: else -> skip
           fi
       };
       if
       :: (s & (CANC | FIN)) || PEND(s) < 1 ->           /* arrive.c:111-117 st_pending: undo (arrive.c:115 atomic_fetch_add_explicit) */
#if MUTANT == 9
          skip;                                          /* bug 9: the refused arrival is never undone */
#else
          atomic { ACCESS; state = state + 1 };
#endif
          r = ((s & (CANC | FIN)) -> ECANCELED : EINVAL)
       :: else -> r = 0
       fi
    :: else ->
       atomic { ACCESS; s = state };                     /* arrive.c:119 state */
       do
       :: (s & (CANC | FIN)) -> r = ECANCELED; break     /* arrive.c:121 tok_cancelled */
       :: !(s & (CANC | FIN)) && (n) > PEND(s) -> r = EINVAL; break /* arrive.c:124 EINVAL */
       :: !(s & (CANC | FIN)) && (n) <= PEND(s) ->
          ns = s - (n) + ((drp) -> DROP_ONE : 0);        /* arrive.c arrive_live */
#if PAIR
          /* a pair's phase these complete, no drop: the carry, in order */
          if
          :: !(drp) && PEND(ns) == 0 && !(s & HALF) && DROPS(s) == 0 ->
             atomic { ACCESS; ok = (STPH(s) == LO(phase)); if :: !ok -> s = state :: else -> skip fi };
             if :: !ok -> goto narragain :: else -> skip fi;
             ns = (s + (1 << PSHIFT)) & SMASK
          :: else -> skip
          fi;
#endif
          atomic {                                       /* arrive.c arrive_live: the CAS */
              ACCESS;
              if
              :: state == s ->
                 state = ns; ok = 1;
                 assert(!gcancel);                       /* P4 */
                 arrived[gS] = arrived[gS] + (n); gph = gS;
                 gdrops[gS] = gdrops[gS] + ((drp) -> 1 : 0);
                 if
                 :: STPH(ns) != STPH(s) ->               /* the carry completes gS */
                    assert(arrived[gS] == GEXP(gS) && !released[gS]);
                    compl[gS]++;
                    assert(compl[gS] == 1);
                    gexp[gS + 1] = GEXP(gS);
                    gS = gS + 1
                 :: else -> skip
                 fi
              :: else -> s = state; ok = 0
              fi
          };
          if :: ok -> r = 0; break :: else -> skip fi;
narragain:
          skip
       od
    fi;
    if
    :: r == 0 && STPH(ns) != STPH(s) ->                  /* arrive.c ticket_release_wrapped */
       atomic { ACCESS; tp = OWNED(phase, s); assert(tp == gph) };
       atomic { ACCESS; phase == tp };
       if
       :: (s & PARKED) -> atomic { ACCESS; state = state & ~PARKED }
       :: else -> skip
       fi;
       publish(tp, (s & PARKED));
       lst = 1; gph = 0;
       goto arrivedone
    :: else -> skip
    fi;
    if
    :: r == 0 ->
       if
       :: PEND(ns) == 0 ->                               /* the completer: owned_phase */
#if MUTANT == 22
          atomic { ACCESS; tp = phase };                 /* bug 22: the phase from `phase` alone */
#else
          atomic { ACCESS; tp = OWNED(phase, ns) };      /* arrive.c owned_phase */
#endif
          assert(tp == gph);
          tmp = 0; gph = 0;
          complete(tp, ns); lst = 1
       :: else ->
          atomic {                                       /* abar__bracket_phase: `phase` after the RMW */
              ACCESS; tmp = phase + 1;                   /* (registered: arrive.c arrive) */
              tp = tmp - ((tmp - STPH(s)) & PMASK);
              BRACKET_OK
          };
          tmp = 0; gph = 0
       fi
    :: else -> skip
    fi;
arrivedone:
    ns = 0; s = 0; ok = 0; tmp = 0
#endif
}

#if AW_REGISTERED
/* AW_REGISTERED: the single arrival arrive_and_wait had at 4d5ff95
 * (arrive.c@4d5ff95:119-136 abar__arrive_registered; reverted by 074e8fd
 * as slower, checked so that it can come back).  Its caller is registered
 * (enter) before it, so it may read the barrier after its RMW: the RMW
 * comes first, with no read before it, then `phase`, and the token from the
 * read after (arrive.c@4d5ff95:24-27 arrival_phase_after:
 * after + 1 - lo(after + 1 - st_phase(s))).  Not with PAIR (a pair's
 * arrivals are adds of HALF).  Token in tp, r = error, lst = completed the phase. */
inline arrive_registered()
{
    lst = 0;
    atomic {                                             /* arrive.c@4d5ff95:123 atomic_fetch_sub_explicit */
        ACCESS; s = state; state = state - 1; ns = s - 1;
        if
        :: !(s & (CANC | FIN)) && PEND(s) >= 1 ->
           assert(!gcancel);                             /* P4: nothing counted after cancel */
           arrived[gS] = arrived[gS] + 1; gph = gS
        :: else -> skip
        fi
    };
    if
    :: (s & (CANC | FIN)) || PEND(s) < 1 ->              /* arrive.c@4d5ff95:124-126 atomic_fetch_add_explicit: undo */
#if MUTANT == 9
       skip;                                             /* bug 9: the refused arrival is never undone */
#else
       atomic { ACCESS; state = state + 1 };
#endif
       r = ((s & (CANC | FIN)) -> ECANCELED : EINVAL)
    :: else ->
       atomic {                                          /* arrive.c@4d5ff95:129-130 arrival_phase_after: `phase` after the RMW */
           ACCESS;
#if MUTANT == 11
           /* bug 11: the before-formula (arrival_phase) on the read after:
            * wrong once `phase` moved past the arrival's phase */
           tmp = phase;
           tp = tmp + ((STPH(s) - tmp) & PMASK);
#else
           tmp = phase + 1;                              /* arrival_phase_after */
           tp = tmp - ((tmp - STPH(s)) & PMASK);
#endif
           assert(tp == gph)                             /* P2: the token names the phase counted in */
       };
       tmp = 0; gph = 0; r = 0;
       if
       :: PEND(s) == 1 -> complete(tp, ns); lst = 1      /* arrive.c@4d5ff95:131-134 abar__complete */
       :: else -> skip
       fi
    fi;
    ns = 0; s = 0; ok = 0; tmp = 0
}
#endif

/* lifecycle.c:136-156 abar_cancel */
inline cancel()
{
    atomic { ACCESS; old = state; state = state | CANC; gcancel = 1 }; /* lifecycle.c:143 atomic_fetch_or_explicit */
    if
    :: old & CANC -> skip                                /* lifecycle.c:144 idempotent */
    :: else ->
#if MUTANT != 5
       atomic { ACCESS; futex = futex | FUT_CANC };      /* lifecycle.c:150 ABAR__FUTEX_CANCELLED: fetch_or of bit 31 */
#endif
       if
       :: (old & PARKED) || FIX_CANCEL_WAKE -> futex_wake_all() /* lifecycle.c:154 abar__futex_wake_all (before 8fb3cd8: only if PARKED) */
       :: else -> skip
       fi
    fi
}

/* lifecycle.c:82-130 abar_destroy */
inline destroy()
{
    atomic { ACCESS; sread = state };                    /* abar_destroy: the look at a glance */
    atomic { ACCESS; tmp = phase };
    if
    :: COMPLETING(sread) || STPH(sread) != LO(tmp) -> r = EBUSY
    :: else ->
       atomic {                                          /* CAS inside 0 -> DEAD */
           ACCESS;
           if
           :: inside == 0 -> inside = INSIDE_DEAD; ok = 1
           :: else -> ok = 0
           fi
       };
       if
       :: !ok -> r = EBUSY
       :: else ->
#if !PSHARED
          /* the heavy fence (see enter), then the hazard slots (read as
           * one step: a slot set after the scan passed it belongs to a
           * waiter that then sees the mark) */
          atomic { ACCESS; i = 0; do :: i < NPROC && !slot[i] -> i++ :: else -> break od };
          if :: i < NPROC -> ok = 0 :: else -> skip fi;
          i = 0;
#endif
          /* the verdict, judged only now: state, then phase */
          if
          :: ok -> atomic { ACCESS; sread = state }; atomic { ACCESS; tmp = phase };
             if :: COMPLETING(sread) || STPH(sread) != LO(tmp) -> ok = 0 :: else -> skip fi
          :: else -> skip
          fi;
          if
          :: !ok -> atomic { ACCESS; inside = inside & ~INSIDE_DEAD }; r = EBUSY
          :: else ->
#if MUTANT != 21
             if                                          /* a cancel between its two flags: */
             :: (sread & CANC) -> atomic { ACCESS; (futex & FUT_CANC) } /* wait for its last write */
             :: else -> skip
             fi;
#endif
             atomic {                                    /* CAS st -> st | FIN, then magic DEAD */
                 ACCESS;
                 if
                 :: state == sread -> state = state | FIN; dead = 1; r = 0
                 :: else -> inside = inside & ~INSIDE_DEAD; r = EBUSY
                 fi
             }
          fi
       fi
    fi;
    tmp = 0; sread = 0; ok = 0
}

#define OP_AW     1  /* abar_arrive_and_wait */
#define OP_SPLIT  2  /* abar_arrive, then abar_wait */
#define OP_TIMED  3  /* abar_arrive, then abar_wait_until (retried untimed) */
#define OP_DROP   4  /* abar_arrive_and_drop, then leave */
#define OP_ONLY   5  /* abar_arrive, no wait, then leave (last phase only) */
#define OP_ARR    6  /* abar_arrive, no wait, and on (EXTRA: arrive-only threads) */

/* How many a worker's abar_arrive counts: NARR for worker 1 with NARR
 * (arrive.c:274-278 abar_arrive_n), else 1. */
#define ARRN ((NARR && _pid == 1) -> NARR : 1)

/* Worker 0 never drops and destroys the barrier after its last wait. */
active [N] proctype worker()
{
    byte k = 0, op, tp, cur, ph1, ph2, gsr, gtr, next, tmp, i, gph, v;
    int s, ns, sread, cur_s;
    byte r;
    bool ok, timed, lastph, entered, lst, left, areg;
#if TREE
    byte pp, e, q, hl, j, kk, age, err, fu, lft, take, units, drps, pass, lim;
    int w, nw, held[NL];
    bool locked, newer;
#endif

    do
    :: k == NPH -> break
    :: k < NPH ->
nextphase:
       if :: k == NPH -> break :: else -> skip fi;
       lastph = (k == NPH - 1);
       /* The menu (FULL_MENU=0 splits it between the workers to fit 3x3):
        * worker 0: AW, SPLIT, TIMED; worker 1: AW, SPLIT, ONLY (last);
        * worker 2: AW, DROP, ONLY (last). */
       /* With EXTRA (anonymous arrivals) a thread's arrivals need not
        * fill its own phases, so a wait may have no one left to complete
        * it: worker 0 waits with a deadline (ETIMEDOUT: on to its next
        * arrival), the others only arrive (OP_ARR). */
       if
       :: !EXTRA && !(NARR && _pid == 1) -> op = OP_AW
       :: !EXTRA && (_pid == 0 || (_pid == 1 || FULL_MENU) && (!lastph || SPLIT_FINAL)) -> op = OP_SPLIT
       :: (_pid == 0 || !EXTRA && FULL_MENU && (!lastph || SPLIT_FINAL)) -> op = OP_TIMED
       :: !EXTRA && (_pid == 2 || FULL_MENU && _pid != 0) && !(NARR && _pid == 1) -> op = OP_DROP
       :: !EXTRA && lastph && _pid != 0 && !NO_ONLY -> op = OP_ONLY
       :: EXTRA && _pid != 0 -> op = OP_ARR
       fi;
       /* OP_AW is abar_arrive_and_wait: arrive_and_wait (arrive_wait.c:78-106 arrive_and_wait),
        * and on a private pair without a completion function (PAIR)
        * pair_arrive_and_wait (arrive_wait.c:46-76 pair_arrive_and_wait), the same steps in one path:
        * slot_push (enter), the look for destroy's mark, abar__ticket_add,
        * the first look at `phase` and the spin, pair_block (block),
        * slot_pop (leave).  Its PREFETCHW before the add
        * (abar__prefetch_pair_add), like lean_spin's, changes no value and
        * orders nothing: not modelled. */
#if PAIR
       /* pair_arrive_and_wait on a barrier of one: abar__one_carry first,
        * unregistered (destroy says EBUSY until its release is published,
        * and a destroy that said 0 changed the state last: the CAS fails) */
       if
       :: op == OP_AW -> atomic { ACCESS; ok = (expected == 1) };
          if
          :: ok ->
             atomic { ACCESS; tmp = phase };             /* abar__one_carry: p */
             atomic {                                    /* its CAS from MAKE(p, 1, 0) */
                 ACCESS;
#if MUTANT == 24
                 if                                      /* bug 24: PARKED not in the compare */
                 :: (state & ~PARKED) == MAKE(tmp, 1, 0) ->
#else
                 if
                 :: state == MAKE(tmp, 1, 0) ->
#endif
                    state = (state + (1 << PSHIFT)) & SMASK;
                    assert(!gcancel);
                    arrived[gS] = arrived[gS] + 1;
                    assert(tmp == gS && arrived[gS] == GEXP(gS) && !released[gS]);
                    compl[gS]++;
                    assert(compl[gS] == 1 && gdrops[gS] == 0);
                    gexp[gS + 1] = GEXP(gS);
                    gS = gS + 1
                 :: else -> ok = 0
                 fi
             };
             if
             :: ok -> tp = tmp; tmp = 0;
                publish(tp, 0);                          /* its release: no PARKED (the CAS saw none) */
                r = 0; lst = 1;
                goto onedone
             :: else -> tmp = 0
             fi
          :: else -> skip
          fi
       :: else -> skip
       fi;
#endif
#if MUTANT == 6
       /* bug 6: arrive_and_wait registers after its arrival */
#else
       if
       :: op == OP_AW -> enter(); assert(entered)        /* arrive_wait.c:90 abar__enter */
       :: else -> skip
       fi;
#endif
retryarrival:
#if FIX_ARRIVAL_PHASE
       /* abar_arrive and friends register for the call (arrive.c arrive) */
       if :: op != OP_AW -> enter(); assert(entered); areg = 1 :: else -> skip fi;
#endif
#if AW_REGISTERED
       if
       :: op == OP_AW -> arrive_registered()             /* wait.c@4d5ff95:245 abar__arrive_registered */
       :: else -> arrive(ARRN, op == OP_DROP)
       fi;
#else
       arrive(ARRN, op == OP_DROP);                      /* wait.c arrive_and_wait / arrive.c */
#endif
       if :: areg -> leave(); areg = 0 :: else -> skip fi; /* not given up by a release */
       /* Anonymous: a wider barrier refuses an arrival that races its
        * completion (EINVAL, nothing counted); the caller arrives again. */
       if :: r == EINVAL && EXTRA && !PAIR -> goto retryarrival :: else -> skip fi;
       goto arrivalmade;
onedone:
       /* nothing to wait for, nothing registered: on to the next phase */
       check_wait(tp, r, 0);
       k++; op = 0; tp = 0; timed = 0; cur = 0; s = 0; entered = 0; lst = 0; left = 0;
       goto nextphase;
arrivalmade:
#if MUTANT == 6
       if :: op == OP_AW -> enter() :: else -> skip fi;
#endif
       if
       :: r != 0 -> assert(r == ECANCELED && gcancel)    /* never EINVAL here */
       :: else -> skip
       fi;
       timed = (op == OP_TIMED);
       if
       :: r == 0 && op == OP_AW ->
#if MUTANT == 13
          leave(); left = 1;                             /* bug 13: leaves right after its arrival */
#endif
          if
          :: lst -> skip                                 /* arrive_wait.c:98 last: we completed it */
          :: else ->
             atomic { ACCESS; tmp = phase };             /* arrive_wait.c:101 phase: released meanwhile? */
             if
#if MUTANT == 12
             :: tmp >= tp -> tmp = 0                     /* bug 12: `phase` == tp taken as released */
#else
             :: tmp > tp -> tmp = 0                      /* arrive_wait.c:101 `> t.raw` */
#endif
#if MUTANT == 13
             :: else -> tmp = 0; wait_registered(tp, 0)  /* bug 13: then waits as abar_wait does */
#else
             :: else -> tmp = 0; block(tp, 0)            /* arrive_wait.c:103-104 abar__block */
#endif
             fi
          fi;
          check_wait(tp, r, 0)
       :: r == 0 && (op == OP_SPLIT || op == OP_TIMED) ->
          do                                             /* wait.c:226-251 wait_common */
          :: atomic { ACCESS; tmp = phase };             /* wait.c:234 phase */
             if
             :: tp < tmp -> r = 0; tmp = 0
             :: else -> tmp = 0; wait_registered(tp, timed) /* wait.c:250 wait_registered */
             fi;
             check_wait(tp, r, timed);
             if
             :: r == ETIMEDOUT && EXTRA -> r = 0; break  /* gave up: on to the next arrival */
             :: r == ETIMEDOUT && !EXTRA -> timed = 0    /* try again, untimed */
             :: else -> break
             fi
          od
       :: else -> skip
       fi;
       if
       :: op == OP_AW && !left -> leave()                /* arrive_wait.c:104 abar__leave */
       :: else -> skip
       fi;
       if
       :: r != 0 || op == OP_DROP || op == OP_ONLY -> break
       :: else -> k++; op = 0; tp = 0; timed = 0; cur = 0; s = 0; entered = 0; lst = 0; left = 0
       fi
    od;
    if
    :: _pid == 0 ->
       /* Destroy right after the own wait (P5).  The canceller and observer
        * are joined first: their calls are not ordered with ours by the
        * barrier.  After a cancel every worker is joined (they may still
        * arrive and be refused). */
       /* A cancel may still be running: only its first write need have
        * happened (a waiter that saw it may destroy at once). */
       ((cdone || gcancel) && odone && edone);
       if
       :: r != 0 || EXTRA -> (wdone == N - 1)           /* anonymous: others may be a phase behind */
       :: else -> skip
       fi;
       do
       :: destroy();
          if
          :: r == 0 -> break
          :: else -> skip    /* EBUSY: try again (the next try waits for news) */
          fi;
          atomic { !(COMPLETING(state) || STPH(state) != LO(phase)) && (inside & 127) == 0 }
       od
    :: else -> wdone++
    fi
}

#if EXTRA
/* Anonymous arrivals (EXTRA > 0): a thread that only arrives, EXTRA
 * arrivals in all, one at a time or (arrive_n) two at once, registered
 * for each call as abar_arrive is, at any moment: in the same phase as a
 * worker's, twice in one phase, or across phases.  A refused arrive_n
 * (EINVAL: fewer pending) is retried as single arrivals. */
active proctype extra()
{
    byte tp, cur, ph1, ph2, gsr, gtr, next, tmp, i, gph, v, left_n, nn;
    int s, ns, cur_s;
    byte r;
    bool ok, entered, lst, areg;
    left_n = EXTRA;
    do
    :: left_n == 0 -> break
    :: left_n > 0 ->
       if
       :: nn = 1
       :: left_n >= 2 -> nn = 2
       fi;
       enter(); assert(entered); areg = 1;
       arrive(nn, 0);
       if :: areg -> leave(); areg = 0 :: else -> skip fi;
       if
       :: r == 0 -> left_n = left_n - nn
       :: r == ECANCELED -> break
       :: r == EINVAL -> assert(nn == 2 || !PAIR)        /* a pair never refuses a single one */
       fi;
       tp = 0; lst = 0
    od;
    edone = 1
}
#endif

#if CANCELLER
active proctype canceller()
{
    int old;
    byte i;
    if
    :: skip                                              /* never cancels */
    :: cancel()
    fi;
    cdone = 1
}
#endif

#if OBSERVER
/* A non-participant: lifecycle.c:167-175 abar_current, then wait.c:253
 * abar_wait. */
active proctype observer()
{
    byte tp, cur, ph1, ph2, gsr, gtr, tmp, i, v;
    int s;
    byte r;
    bool ok, entered;

    snapshot(cur, s);                                    /* lifecycle.c:172 abar__snapshot */
    if
    :: (s & CANC) && !COMPLETING(s) -> r = ECANCELED     /* lifecycle.c:173 ECANCELED */
    :: else -> r = 0; tp = STATE_PHASE(cur, s)           /* lifecycle.c:174 abar__state_phase */
    fi;
    if
    :: r == 0 && tp < NPH ->
       atomic { ACCESS; tmp = phase };                   /* wait.c:234 phase */
       if
       :: tp < tmp -> r = 0; tmp = 0
       :: else -> tmp = 0; wait_registered(tp, 0)        /* wait.c:250 wait_registered */
       fi;
       check_wait(tp, r, 0)
    :: else -> skip
    fi;
    odone = 1
}
#endif
