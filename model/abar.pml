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
 * With PAIR, the last single arrival of a barrier of two without a
 * completion function counts itself and opens the next phase in one CAS,
 * then publishes as a completer does.  AW_REGISTERED=1 checks the
 * arrival arrive_and_wait had at 4d5ff95.
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
 *      allowed, futex.c:52-55); destroy is EBUSY while anyone is inside.
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
 * although PARKED, 8 (with PAIR) pair_last publishes as if it had not found
 * PARKED: no bump, no wake; livelocks, for P6: 9 a refused single arrival
 * is never undone, 10 the completer's futex CAS retries with a stale value;
 * 11 (with AW_REGISTERED) the registered arrival computes its token with
 * the before-formula (arrival_phase) from its read after the RMW: wrong
 * once `phase` moved past the arrival's phase (P2); 12 arrive_and_wait's
 * check before it waits takes `phase` >= its token (not >) as released (P1);
 * 13 arrive_and_wait leaves right after its arrival, then reads `phase`
 * and waits as abar_wait does (registering again): its read after the RMW
 * is unregistered (P5).
 * Number 4 is unused (no bug of that kind remains: the futex word's cancel
 * bit only hastens spinners, whose 1024th round looks anyway)),
 * ATOMIC_SNAPSHOT (0: 1 makes abar__snapshot one step, see there),
 * FIX_ARRIVAL_PHASE (1, as arrive.c:60-61 since 8fb3cd8: the token from
 * `phase` read before the arrival's RMW; 0: the code before, read after it,
 * finding F1 in docs/reliability.md; with AW_REGISTERED, arrive_and_wait's
 * arrival reads after its RMW either way, as it may: see arrive_registered),
 * AW_REGISTERED (0: arrive_and_wait's arrival is abar__arrive1, the one
 * above, arrive.c:112; 1: the registered arrival the core had at 4d5ff95:
 * the RMW alone, then `phase` read after it, never pair_last; checked as a
 * variant, should it come back),
 * FIX_CANCEL_WAKE (1, as lifecycle.c:116-119 since 8fb3cd8: abar_cancel
 * always wakes; 0: only when PARKED, finding F2),
 * FIX_CANCEL_PARK (1, as wait.c:137 since 177c88b: a parker whose look said
 * "pending" on a cancelled state yields instead of sleeping; 0: it parks,
 * finding F4),
 * NO_ONLY (0: 1 leaves out the plain arrive without a wait in the last
 * phase, whose access after its counted arrival is a known finding),
 * PSHARED (0: waiters announce themselves in hazard slots, hazard.c; 1: in
 * the `inside` count, as process-shared barriers do),
 * FULL_MENU (0: 1 lets every worker choose every call pattern each phase),
 * PAIR (0: the barrier has a completion function, so every arrival takes
 * the general path; 1: it has none and expects N <= ABAR__PAIR_MAX = 2
 * threads, abar_internal.h:87-96: a single arrival first tries pair_last,
 * arrive.c:65, which counts the last arrival and opens the next phase in
 * one CAS; since 63886e9; not the registered arrival of AW_REGISTERED).
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
#if MUTANT == 11 && !AW_REGISTERED
#error MUTANT 11 is a bug of the arrival of AW_REGISTERED
#endif
#if PAIR && (N > 2 || !FIX_ARRIVAL_PHASE)
#error PAIR needs N <= 2 (ABAR__PAIR_MAX) and FIX_ARRIVAL_PHASE
#endif

#define NPROC (N + 2)
#define NPHA (NPH + 2)

#define EBUSY     16
#define EINVAL    22
#define EDEADLK   35
#define ETIMEDOUT 110
#define ECANCELED 125
#define OPEN      255   /* judge: the token's phase is the open one (wait.c:8) */

/* The state word, abar_internal.h:4-20 and 46-56, shrunk: pending with a
 * bias of 8 in 4 bits (it reads below 0 while refused arrivals are undone),
 * drops 3 bits, the flags, then PBITS of phase (the C: 22, 20, 3 flags, 19). */
#define BIAS        8
#define PEND(s)     (((s) & 15) - BIAS)
#define DROPS(s)    (((s) >> 4) & 7)
#define DROP_ONE    16
#define PARKED      128
#define CANC        256
#define FIN         512
#define PSHIFT      10
#define PMASK       ((1 << PBITS) - 1)
#define STPH(s)     (((s) >> PSHIFT) & PMASK)
#define LO(p)       ((p) & PMASK)
#define MAKE(p, pend, fl) ((LO(p) << PSHIFT) | (fl) | ((pend) + BIAS))  /* abar_internal.h:66-69 */
#define COMPLETING(s) (PEND(s) <= 0 && ((s) & FIN) == 0)               /* abar_internal.h:71-74 */
/* The 32-bit futex word (abar_internal.h:82-83), shrunk to 8 bits: bit 7 is
 * ABAR__FUTEX_CANCELLED (bit 31, abar_internal.h:76, set by abar_cancel),
 * the low 7 bits count the releases that found PARKED (arrive.c:177-182;
 * at most NPH of them here, so the count never wraps back to a value a
 * sleeper read). */
#define FUT_CANC    128
#define FUT_COUNT   127
#define INSIDE_DEAD 128           /* ABAR__INSIDE_DEAD, abar_internal.h:194 */

/* ---- the barrier (struct abar_impl, abar_internal.h:98-119) ----
 * `phase` and `futex` are the release words (struct abar__release,
 * abar_internal.h:78-85), which every access reaches through rel(b)
 * (abar_internal.h:128-132): `pair` beside the state word or `wide` on a
 * line of its own, fixed at init (ABAR__PAIR, lifecycle.c:61), so either way
 * one pair of words; where they live makes no difference to the protocol.
 * What ABAR__PAIR does change, pair_last, is the PAIR knob. */
int  state = N + BIAS;  /* MAKE(0, N, 0): abar_init, lifecycle.c:66 */
byte phase = 0;         /* completed phases (byte: NPH < 250), lifecycle.c:67,69 */
byte futex = 0;         /* lifecycle.c:68,70 */
byte inside = 0;        /* count (PSHARED) | INSIDE_DEAD */
byte expected = N;
bool dead = 0;          /* magic == ABAR__MAGIC_DEAD, set by destroy */
bool slot[NPROC];       /* hazard.c: thread i announces this barrier */
bool fq[NPROC];         /* kernel futex queue: fq[i] = thread i sleeps */

/* ---- ghosts: what the spec says happened ---- */
byte gS = 0;               /* the phase the state word names (open phase) */
byte arrived[NPHA];        /* arrivals counted in phase p */
byte gdrops[NPHA];         /* drops counted in phase p */
byte gexp[NPHA];           /* expected count of phase p (p > 0; p = 0: N) */
byte compl[NPHA];          /* completions run for phase p */
bool released[NPHA];       /* the release of phase p (its `phase` store) happened */
bool gcancel = 0;          /* abar_cancel's fetch_or happened */
bool gfinished = 0;        /* the last drop's phase was opened */
byte wdone = 0;            /* workers (other than 0) that returned for good */
bool cdone = !CANCELLER, odone = !OBSERVER;
#define GEXP(p)    ((p) == 0 -> N : gexp[p])

/* Every access to barrier memory: never after a successful destroy (P5).
 * abar__live's load of magic (abar_internal.h:150) is folded into the call's
 * next access: a destroy before either is caught by that access. */
#define ACCESS     assert(!dead)

/* abar__snapshot, abar_internal.h:157-171: read phase, state, phase again;
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
    :: atomic { ACCESS; ph1 = phase };                   /* abar_internal.h:161 */
       atomic { ACCESS; sv = state; gsr = gS };          /* abar_internal.h:163 */
       atomic { ACCESS; ph2 = phase };                   /* abar_internal.h:166 */
       if
       :: ph2 == ph1 ->
          res = ph1;                                     /* abar_internal.h:167-168 */
          assert(gsr == res || gsr == res + 1);          /* P2: phase in {S-1, S} */
          assert(STPH(sv) == LO(gsr));
          ph1 = 0; ph2 = 0; gsr = 0;                     /* dead: keep the state space small */
          break
       :: else -> skip
       fi
    od
}
#endif
/* abar__state_phase, abar_internal.h:173-176 */
#define STATE_PHASE(c, sv) (STPH(sv) == LO(c) -> (c) : (c) + 1)

/* judge, wait.c:14-26 (EDEADLK needs a completion that waits: not modelled) */
inline judge(res, tk, c, sv)
{
    if
    :: tk < c -> res = 0                                             /* wait.c:16 */
    :: tk >= c && tk > STATE_PHASE(c, sv) -> res = EINVAL            /* wait.c:18 */
    :: tk >= c && tk < STATE_PHASE(c, sv) -> res = EBUSY             /* wait.c:19 */
    :: tk >= c && tk == STATE_PHASE(c, sv) && (sv & FIN) -> res = ECANCELED /* wait.c:20 */
    :: tk >= c && tk == STATE_PHASE(c, sv) && !(sv & FIN) && (sv & CANC) && !COMPLETING(sv) ->
       res = ECANCELED                                               /* wait.c:23 */
    :: else -> res = OPEN                                            /* wait.c:25 */
    fi
}
#define PENDING(r) ((r) == EBUSY || (r) == OPEN)                     /* wait.c:34 */

/* look, wait.c:28-32 */
inline look(res, tk)
{
    snapshot(cur, s);
    judge(res, tk, cur, s)
}

/* abar__futex_wake_all, futex.c:56-62: touches only the address. */
inline futex_wake_all()
{
    d_step { i = 0; do :: i < NPROC -> fq[i] = 0; i++ :: else -> break od; i = 0 }
}

/* abar__futex_wait, futex.c:66-76 (FUTEX_WAIT_BITSET, futex.c:71), called
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

/* block, wait.c:52-152: spin (unless PARK), then park.  Returns in r. */
inline block(tk, tmd)
{
    /* The spin loop, wait.c:84-119.  Its policy is a free choice each round:
     * ABAR_WAIT_PARK skips it (wait.c:78), the default leaves it when the
     * budget is spent (and, oversubscribed, after 4 yields per participant:
     * any round, wait.c:110-113), ABAR_WAIT_SPIN never leaves
     * it.  A round reads `phase` (wait.c:89; the first 128 rounds,
     * wait.c:68-71, read only `phase`), then the futex word's cancel
     * bit (wait.c:92), and looks (wait.c:94) when the bit is set or on every
     * 1024th round (wait.c:93).  A round whose loads find phase <= tk, the
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
    :: atomic { ACCESS; phase > tk || (futex & FUT_CANC) || (state & (CANC | FIN)) || dead } ->
       atomic { ACCESS; tmp = phase };                   /* wait.c:70,89 */
       if
       :: tmp > tk -> r = 0; goto blockdone
       :: else -> skip
       fi;
       atomic { ACCESS; tmp = futex };                   /* wait.c:92 */
       if
       :: skip ->                                        /* wait.c:92-93: the cancel bit, or i % 1024 == 0 */
          tmp = 0;
          look(r, tk);                                   /* wait.c:94 */
          if :: !PENDING(r) -> goto blockdone :: else -> skip fi
       :: !(tmp & FUT_CANC) -> tmp = 0                   /* no bit, not a 1024th round */
       fi
    :: tmd ->                                            /* wait.c:101-104: deadline, one more look */
       look(r, tk);
       r = (PENDING(r) -> ETIMEDOUT : r);
       goto blockdone
    :: break                                             /* wait.c:78,113: park */
    od;
    /* The park loop, wait.c:129-151. */
    do
    :: atomic { ACCESS; v = futex };                     /* wait.c:134: the word before the look */
       look(r, tk);                                      /* wait.c:135 */
       if :: !PENDING(r) -> goto blockdone :: else -> skip fi;
       if :: tmd -> r = ETIMEDOUT; goto blockdone :: skip fi; /* wait.c:136 */
       if
       :: r == EBUSY -> goto parkagain                   /* wait.c:137-139: yield */
#if FIX_CANCEL_PARK
       :: r != EBUSY && (s & CANC) -> goto parkagain     /* wait.c:137-139: cancelled, looked complete: yield */
#endif
       :: else -> skip
       fi;
#if MUTANT == 2
       /* bug 2: sleep without announcing PARKED */
#else
       if
       :: !(s & PARKED) ->                               /* wait.c:143-146 */
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
       futex_wait(r, v, tmd);                            /* wait.c:147 */
       if
       :: r == ETIMEDOUT ->
          look(r, tk);                                   /* wait.c:148 */
          r = (PENDING(r) -> ETIMEDOUT : r);             /* wait.c:149 */
          goto blockdone
       :: else -> skip
       fi;
parkagain:
       v = 0
    od;
blockdone:
    cur = 0; s = 0; ok = 0; tmp = 0; v = 0
}

/* enter, wait.c:161-186: announce, then wait out a destroy's mark.
 *
 * The hazard-slot fences (hazard.c:11-21).  The C orders the slot store
 * before the waiter's next loads with a "light" fence (wait.c:169,
 * abar_internal.h:225-232: only a compiler barrier where membarrier is
 * registered) and destroy's mark before its slot loads with a "heavy" one
 * (lifecycle.c:93, hazard.c:50-60: membarrier PRIVATE_EXPEDITED, then a
 * seq_cst fence).  The model is sequentially consistent, i.e. it assumes a
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
    atomic { ACCESS; inside++ };                         /* wait.c:173 */
#else
    atomic { ACCESS; slot[_pid] = 1 };                   /* wait.c:165, light fence 169 */
#endif
    entered = 1;
    do
    :: atomic { ACCESS; !(inside & INSIDE_DEAD) } -> break /* wait.c:178 */
    :: atomic { (inside & INSIDE_DEAD) && dead } ->      /* wait.c:179: destroyed */
       entered = 0; break
    od;
    if
    :: !entered ->                                       /* wait.c:180 leave */
#if PSHARED
       atomic { inside-- }
#else
       slot[_pid] = 0
#endif
    :: else -> skip
    fi
}

/* leave, wait.c:190-198: after it this thread touches the barrier no more. */
inline leave()
{
#if PSHARED
    atomic { ACCESS; inside-- }                          /* wait.c:193 */
#else
    atomic { ACCESS; slot[_pid] = 0 }                    /* wait.c:196 */
#endif
}

/* wait_registered, wait.c:201-208 (the caller, wait_common, found the token
 * not yet complete on the release words, wait.c:218). */
inline wait_registered(tk, tmd)
{
    enter();                                             /* wait.c:204 */
    assert(entered);                                     /* no destroy races these waits */
    block(tk, tmd);                                      /* wait.c:205 */
    leave()                                              /* wait.c:206 */
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

/* publish, arrive.c:159-185: release the waiters of phase p after the
 * release CAS on `state`, which found PARKED if prk.  Only then the futex
 * word changes: its count bits, by CAS, keeping the cancel bit (a cancel may
 * set it meanwhile).  Uses tmp (the caller's is dead by now). */
inline publish(p, prk)
{
#if MUTANT == 7
    /* bug 7: the futex word is not changed although PARKED */
#else
    if
    :: prk ->                                            /* arrive.c:177 */
       atomic { ACCESS; tmp = futex };                   /* arrive.c:178: f */
       do                                                /* arrive.c:179-181 */
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
#if MUTANT != 1
    atomic { ACCESS; phase = p + 1; released[p] = 1 };   /* arrive.c:183: the last access */
#endif
#if MUTANT == 3
    skip                                                 /* bug 3: never wake */
#else
    if
    :: prk -> futex_wake_all()                           /* arrive.c:184 */
    :: else -> skip
    fi
#endif
}

/* abar__complete, arrive.c:121-157, for phase p whose last arrival made ns
 * (bug 1 stores `phase` before the state CAS; publish then leaves it out). */
inline complete(p, ns)
{
    atomic {                                             /* arrive.c:125-130: the completion */
        ACCESS;
        assert(arrived[p] == GEXP(p));                   /* P1: every arrival counted */
        assert(!released[p]);                            /* P1: before any release */
        compl[p]++;
        assert(compl[p] == 1)                            /* P1: exactly once */
    };
    atomic { ACCESS; next = expected - DROPS(ns) };      /* arrive.c:134 */
    if
    :: DROPS(ns) -> atomic { ACCESS; expected = next }   /* arrive.c:135 */
    :: else -> skip
    fi;
    atomic { ACCESS; phase == p };                       /* arrive.c:138: publish in order */
#if MUTANT == 1
    atomic { ACCESS; phase = p + 1; released[p] = 1 };   /* bug 1: release before the state CAS */
#endif
    atomic { ACCESS; cur_s = state };                    /* arrive.c:139 */
    do                                                   /* arrive.c:146-155 */
    :: atomic {
           ACCESS;
           if
           :: PEND(cur_s) != 0 -> cur_s = state; ok = 0  /* arrive.c:147-149: an undo pending */
           :: PEND(cur_s) == 0 && state == cur_s ->      /* arrive.c:150-153 */
              state = MAKE(p + 1, next, (cur_s & CANC) | (next == 0 -> FIN : 0));
              gS = p + 1;
              gexp[p + 1] = GEXP(p) - gdrops[p];
              assert(gexp[p + 1] == next);               /* expected tracks drops */
              if :: next == 0 -> gfinished = 1 :: else -> skip fi;
              ok = 1
           :: PEND(cur_s) == 0 && state != cur_s -> cur_s = state; ok = 0
           fi
       };
       if :: ok -> break :: else -> skip fi
    od;
    publish(p, (cur_s & PARKED));                        /* arrive.c:156 */
    cur_s = 0; next = 0; ok = 0
}

#if PAIR
/* pair_last, arrive.c:21-51: the last arrival of a pair's phase (PAIR: the
 * barrier expects N <= ABAR__PAIR_MAX threads and has no completion
 * function, arrive.c:65) counts itself and opens phase p+1 in one CAS, then
 * publishes.  ok = 1 if it did (token in tp); else nothing changed and the
 * general path counts the arrival.  tmp holds `before` (arrive.c:61). */
inline pair_last()
{
    ok = 0;
    atomic { ACCESS; s = state };                        /* arrive.c:32 */
    do
    :: PEND(s) == 1 && !(s & (CANC | FIN)) && DROPS(s) == 0 -> /* arrive.c:33 */
       tp = tmp + ((STPH(s) - tmp) & PMASK);             /* arrive.c:34: arrival_phase */
       if
       :: atomic { phase != tp -> ACCESS }; break        /* arrive.c:36: p not yet published */
       :: atomic { phase == tp -> ACCESS }               /* arrive.c:36 */
       fi;
       atomic { ACCESS; next = expected };               /* arrive.c:37 */
       atomic {                                          /* arrive.c:43-44: count and open p+1 */
           ACCESS;
           if
           :: state == s ->
              state = MAKE(tp + 1, next, 0);
              assert(!gcancel);                          /* P4: nothing counted after cancel */
              assert(tp == gS);                          /* P2: the token names the phase counted in */
              arrived[gS] = arrived[gS] + 1;
              /* No completion function: the phase completes here (the ghost
               * of P1's completion, as in complete()). */
              assert(arrived[tp] == GEXP(tp) && !released[tp]);
              compl[tp]++;
              assert(compl[tp] == 1);
              gS = tp + 1;
              gexp[tp + 1] = GEXP(tp) - gdrops[tp];
              assert(gexp[tp + 1] == next);              /* expected tracks drops */
              ok = 1
           :: else -> s = state                          /* arrive.c:43: failed, judge again */
           fi
       };
       if :: ok -> break :: else -> skip fi
    :: else -> break                                     /* arrive.c:50: the general path */
    od;
    next = 0;
    if
#if MUTANT == 8
    :: ok -> publish(tp, 0)                              /* bug 8: the pair path ignores PARKED */
#else
    :: ok -> publish(tp, (s & PARKED))                   /* arrive.c:45 */
#endif
    :: else -> tp = 0
    fi
}
#endif

/* arrive_live, arrive.c:55-100 (abar_arrive and the others reach it through
 * arrive(), arrive.c:102-110, arrive_and_wait through abar__arrive1, 112):
 * n arrivals (a drop if drp); token in tp, r = error, lst = this call
 * completed the phase (*last). */
inline arrive(n, drp)
{
    lst = 0;
#if FIX_ARRIVAL_PHASE
    atomic { ACCESS; tmp = phase };                      /* arrive.c:61: before the RMW */
#endif
    if
    :: (n) == 1 && !(drp) ->                             /* arrive.c:63 */
#if PAIR
       pair_last();                                      /* arrive.c:65 */
       if :: ok -> r = 0; lst = 1; goto arrivedone :: else -> skip fi; /* arrive.c:67 */
#endif
       atomic {                                          /* arrive.c:73 fetch_sub */
           ACCESS; s = state; state = state - 1; ns = s - 1;
           if
           :: !(s & (CANC | FIN)) && PEND(s) >= 1 ->
              assert(!gcancel);                          /* P4: nothing counted after cancel */
              arrived[gS] = arrived[gS] + 1; gph = gS
           :: else -> skip
           fi
       };
       if
       :: (s & (CANC | FIN)) || PEND(s) < 1 ->           /* arrive.c:75-81: undo (79) */
#if MUTANT == 9
          skip;                                          /* bug 9: the refused arrival is never undone */
#else
          atomic { ACCESS; state = state + 1 };
#endif
          r = ((s & (CANC | FIN)) -> ECANCELED : EINVAL)
       :: else -> r = 0
       fi
    :: else ->
       atomic { ACCESS; s = state };                     /* arrive.c:83 */
       do
       :: (s & (CANC | FIN)) -> r = ECANCELED; break     /* arrive.c:85 */
       :: !(s & (CANC | FIN)) && (n) > PEND(s) -> r = EINVAL; break /* arrive.c:88 */
       :: !(s & (CANC | FIN)) && (n) <= PEND(s) ->
          ns = s - (n) + ((drp) -> DROP_ONE : 0);        /* arrive.c:89 */
          atomic {                                       /* arrive.c:91 */
              ACCESS;
              if
              :: state == s ->
                 state = ns; ok = 1;
                 assert(!gcancel);                       /* P4 */
                 arrived[gS] = arrived[gS] + (n); gph = gS;
                 gdrops[gS] = gdrops[gS] + ((drp) -> 1 : 0)
              :: else -> s = state; ok = 0
              fi
          };
          if :: ok -> r = 0; break :: else -> skip fi
       od
    fi;
    if
    :: r == 0 ->
#if FIX_ARRIVAL_PHASE
       tp = tmp + ((STPH(s) - tmp) & PMASK);             /* arrive.c:94, 14-17: no access after the RMW */
       assert(tp == gph);
#else
       atomic {                                          /* before 8fb3cd8: arrival_phase read phase here */
           ACCESS; tmp = phase + 1;
           tp = tmp - ((tmp - STPH(s)) & PMASK);
           assert(tp == gph)                             /* P2: the token names the phase counted in */
       };
#endif
       tmp = 0; gph = 0;
       if
       :: PEND(ns) == 0 -> complete(tp, ns); lst = 1     /* arrive.c:95-97 */
       :: else -> skip
       fi
    :: else -> skip
    fi;
arrivedone:
    ns = 0; s = 0; ok = 0; tmp = 0
}

#if AW_REGISTERED
/* AW_REGISTERED: the single arrival arrive_and_wait had at 4d5ff95
 * (abar__arrive_registered, arrive.c@4d5ff95:119-136; reverted by 074e8fd
 * as slower, checked so that it can come back).  Its caller is registered
 * (enter) before it, so it may read the barrier after its RMW: the RMW
 * comes first, with no read before it, then `phase`, and the token from the
 * read after (arrival_phase_after, arrive.c@4d5ff95:24-27:
 * after + 1 - lo(after + 1 - st_phase(s))).  Never pair_last, even with
 * PAIR.  Token in tp, r = error, lst = completed the phase. */
inline arrive_registered()
{
    lst = 0;
    atomic {                                             /* @4d5ff95:123 fetch_sub */
        ACCESS; s = state; state = state - 1; ns = s - 1;
        if
        :: !(s & (CANC | FIN)) && PEND(s) >= 1 ->
           assert(!gcancel);                             /* P4: nothing counted after cancel */
           arrived[gS] = arrived[gS] + 1; gph = gS
        :: else -> skip
        fi
    };
    if
    :: (s & (CANC | FIN)) || PEND(s) < 1 ->              /* @4d5ff95:124-126: undo */
#if MUTANT == 9
       skip;                                             /* bug 9: the refused arrival is never undone */
#else
       atomic { ACCESS; state = state + 1 };
#endif
       r = ((s & (CANC | FIN)) -> ECANCELED : EINVAL)
    :: else ->
       atomic {                                          /* @4d5ff95:129-130: `phase` after the RMW */
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
       :: PEND(s) == 1 -> complete(tp, ns); lst = 1      /* @4d5ff95:131-134 */
       :: else -> skip
       fi
    fi;
    ns = 0; s = 0; ok = 0; tmp = 0
}
#endif

/* abar_cancel, lifecycle.c:103-121 */
inline cancel()
{
    atomic { ACCESS; old = state; state = state | CANC; gcancel = 1 }; /* lifecycle.c:108 */
    if
    :: old & CANC -> skip                                /* lifecycle.c:109 */
    :: else ->
#if MUTANT != 5
       atomic { ACCESS; futex = futex | FUT_CANC };      /* lifecycle.c:115: fetch_or of bit 31 */
#endif
       if
       :: (old & PARKED) || FIX_CANCEL_WAKE -> futex_wake_all() /* lifecycle.c:119 (before 8fb3cd8: only if PARKED) */
       :: else -> skip
       fi
    fi
}

/* abar_destroy, lifecycle.c:79-101 */
inline destroy()
{
    atomic { ACCESS; sread = state };                    /* lifecycle.c:84 */
    atomic { ACCESS; tmp = phase };                      /* lifecycle.c:85 */
    if
    :: COMPLETING(sread) || STPH(sread) != LO(tmp) -> r = EBUSY
    :: else ->
       atomic {                                          /* lifecycle.c:89 CAS 0 -> DEAD */
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
          /* lifecycle.c:93-94: the heavy fence (see enter), then the
           * hazard slots (hazard.c:108-115, read as one step: a slot
           * set after the scan passed it belongs to a waiter that then
           * sees the mark, wait.c:178) */
          atomic { ACCESS; i = 0; do :: i < NPROC && !slot[i] -> i++ :: else -> break od };
          if
          :: i < NPROC -> atomic { ACCESS; inside = inside & ~INSIDE_DEAD }; r = EBUSY /* lifecycle.c:95-96 */
          :: else ->
#endif
             atomic { ACCESS; dead = 1 }; r = 0          /* lifecycle.c:99 */
#if !PSHARED
          fi;
          i = 0
#endif
       fi
    fi;
    tmp = 0; sread = 0; ok = 0
}

#define OP_AW     1  /* abar_arrive_and_wait */
#define OP_SPLIT  2  /* abar_arrive, then abar_wait */
#define OP_TIMED  3  /* abar_arrive, then abar_wait_until (retried untimed) */
#define OP_DROP   4  /* abar_arrive_and_drop, then leave */
#define OP_ONLY   5  /* abar_arrive, no wait, then leave (last phase only) */

/* Worker 0 never drops and destroys the barrier after its last wait. */
active [N] proctype worker()
{
    byte k = 0, op, tp, cur, ph1, ph2, gsr, next, tmp, i, gph, v;
    int s, ns, sread, cur_s;
    byte r;
    bool ok, timed, lastph, entered, lst, left;

    do
    :: k == NPH -> break
    :: k < NPH ->
       lastph = (k == NPH - 1);
       /* The menu (FULL_MENU=0 splits it between the workers to fit 3x3):
        * worker 0: AW, SPLIT, TIMED; worker 1: AW, SPLIT, ONLY (last);
        * worker 2: AW, DROP, ONLY (last). */
       if
       :: op = OP_AW
       :: (_pid == 0 || (_pid == 1 || FULL_MENU) && (!lastph || SPLIT_FINAL)) -> op = OP_SPLIT
       :: (_pid == 0 || FULL_MENU && (!lastph || SPLIT_FINAL)) -> op = OP_TIMED
       :: (_pid == 2 || FULL_MENU && _pid != 0) -> op = OP_DROP
       :: lastph && _pid != 0 && !NO_ONLY -> op = OP_ONLY
       fi;
#if MUTANT == 6
       /* bug 6: arrive_and_wait registers after its arrival */
#else
       if
       :: op == OP_AW -> enter(); assert(entered)        /* wait.c:275 */
       :: else -> skip
       fi;
#endif
#if AW_REGISTERED
       if
       :: op == OP_AW -> arrive_registered()             /* wait.c@4d5ff95:245 */
       :: else -> arrive(1, op == OP_DROP)
       fi;
#else
       arrive(1, op == OP_DROP);                         /* wait.c:276 / arrive.c:112, 185-189, 197-201 */
#endif
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
          :: lst -> skip                                 /* wait.c:279: we completed it */
          :: else ->
             atomic { ACCESS; tmp = phase };             /* wait.c:282: released meanwhile? */
             if
#if MUTANT == 12
             :: tmp >= tp -> tmp = 0                     /* bug 12: `phase` == tp taken as released */
#else
             :: tmp > tp -> tmp = 0                      /* wait.c:282 */
#endif
#if MUTANT == 13
             :: else -> tmp = 0; wait_registered(tp, 0)  /* bug 13: then waits as abar_wait does */
#else
             :: else -> tmp = 0; block(tp, 0)            /* wait.c:283 */
#endif
             fi
          fi;
          check_wait(tp, r, 0)
       :: r == 0 && (op == OP_SPLIT || op == OP_TIMED) ->
          do                                             /* wait_common, wait.c:210-230 */
          :: atomic { ACCESS; tmp = phase };             /* wait.c:218 */
             if
             :: tp < tmp -> r = 0; tmp = 0
             :: else -> tmp = 0; wait_registered(tp, timed) /* wait.c:229 */
             fi;
             check_wait(tp, r, timed);
             if
             :: r == ETIMEDOUT -> timed = 0              /* try again, untimed */
             :: else -> break
             fi
          od
       :: else -> skip
       fi;
       if
       :: op == OP_AW && !left -> leave()                /* wait.c:284 */
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
       (cdone && odone);
       if
       :: r != 0 -> (wdone == N - 1)
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
/* A non-participant: abar_current, then abar_wait (wait.c:244-252, 179-199). */
active proctype observer()
{
    byte tp, cur, ph1, ph2, gsr, tmp, i, v;
    int s;
    byte r;
    bool ok, entered;

    snapshot(cur, s);                                    /* wait.c:249 */
    if
    :: (s & CANC) && !COMPLETING(s) -> r = ECANCELED     /* wait.c:250 */
    :: else -> r = 0; tp = STATE_PHASE(cur, s)           /* wait.c:251 */
    fi;
    if
    :: r == 0 && tp < NPH ->
       atomic { ACCESS; tmp = phase };                   /* wait.c:218 */
       if
       :: tp < tmp -> r = 0; tmp = 0
       :: else -> tmp = 0; wait_registered(tp, 0)        /* wait.c:229 */
       fi;
       check_wait(tp, r, 0)
    :: else -> skip
    fi;
    odone = 1
}
#endif
