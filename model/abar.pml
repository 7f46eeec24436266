/*
 * abar.pml - a Promela model of the abar host protocol (src/arrive.c,
 * src/wait.c, src/lifecycle.c, src/futex.c, src/abar_internal.h), checked
 * exhaustively with Spin.  Every step below names the C line it mirrors;
 * when the C changes, change the step beside its annotation.
 *
 * What is modelled.  Each C atomic operation on the barrier (a load, a store,
 * a CAS, a fetch-op) is one indivisible Promela step, so Spin explores every
 * interleaving of them between N participant threads (workers), a canceller
 * and an observer (a non-participant that waits with abar_current).  The
 * model is sequentially consistent; the C code's acquire/release argument is
 * written beside each atomic there, and checked on a weak-memory target only
 * by tests/ (see docs/reliability.md).  The futex is modelled as the kernel
 * gives it: FUTEX_WAIT compares and enqueues in one step, FUTEX_WAKE dequeues
 * every sleeper.
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
 *      allowed, futex.c:54-57); destroy is EBUSY while anyone is inside.
 *
 * Knobs (spin -DNAME=value): N workers (3), NPH phases (3), PBITS phase bits
 * in the state word (2: the 21-bit field wraps every 4 phases here, so the
 * wrap logic of abar__snapshot is exercised), OBSERVER (1), CANCELLER (1),
 * SIGNALS (0: 1 lets futex_wait return spuriously, as on EINTR; P3 is then
 * not checked, since a spurious return can mask a lost wake-up), SPLIT_FINAL
 * (0: 1 lets non-destroying workers use a split arrive + wait in the last
 * phase, which SPEC does not make safe against destroy: see reliability.md),
 * MUTANT (0: k>0 plants bug k, which the check must find; see run_model.sh),
 * ATOMIC_SNAPSHOT (0: 1 makes abar__snapshot one step, see there),
 * FIX_ARRIVAL_PHASE (1, as arrive.c:25-26 since 8fb3cd8: the token from
 * `phase` read before the arrival's RMW; 0: the code before, read after it,
 * finding F1 in docs/reliability.md),
 * FIX_CANCEL_WAKE (1, as lifecycle.c since 8fb3cd8: abar_cancel always
 * wakes; 0: only when PARKED, finding F2),
 * NO_ONLY (0: 1 leaves out the plain arrive without a wait in the last
 * phase, whose access after its counted arrival is a known finding),
 * PSHARED (0: waiters announce themselves in hazard slots, hazard.c; 1: in
 * the `inside` count, as process-shared barriers do),
 * FULL_MENU (0: 1 lets every worker choose every call pattern each phase).
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
#ifndef NO_ONLY
#define NO_ONLY 0
#endif
#ifndef ATOMIC_SNAPSHOT
#define ATOMIC_SNAPSHOT 0
#endif

#define NPROC (N + 2)
#define NPHA (NPH + 2)

#define EBUSY     16
#define EINVAL    22
#define EDEADLK   35
#define ETIMEDOUT 110
#define ECANCELED 125
#define OPEN      255   /* judge: the token's phase is the open one (wait.c:8) */

/* The state word, abar_internal.h:4-15, shrunk: pending with a bias of 8 in
 * 4 bits (it reads below 0 while refused arrivals are undone), drops 3 bits,
 * the flags, then PBITS of phase (the C: 22, 20, 3 flags, 19). */
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
#define MAKE(p, pend, fl) ((LO(p) << PSHIFT) | (fl) | ((pend) + BIAS))  /* abar_internal.h:64-67 */
#define COMPLETING(s) (PEND(s) <= 0 && ((s) & FIN) == 0)               /* abar_internal.h:69-72 */
#define FUT(p)      ((p) & 255)   /* the 32-bit futex word, shrunk to 8 bits */
#define FUT_BUMP    128           /* cancel's +0x80000000, lifecycle.c:105 */
#define INSIDE_DEAD 128           /* ABAR__INSIDE_DEAD, abar_internal.h:160 */

/* ---- the barrier (struct abar_impl, abar_internal.h:74-94) ---- */
int  state = N + BIAS;  /* MAKE(0, N, 0): abar_init, lifecycle.c:62 */
byte phase = 0;         /* completed phases (byte: NPH < 250) */
byte futex = 0;
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
 * abar__live's load of magic (abar_internal.h:111) is folded into the call's
 * next access: a destroy before either is caught by that access. */
#define ACCESS     assert(!dead)

/* abar__snapshot, abar_internal.h:117-131: read phase, state, phase again;
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
    :: atomic { ACCESS; ph1 = phase };                   /* abar_internal.h:121 */
       atomic { ACCESS; sv = state; gsr = gS };          /* abar_internal.h:123 */
       atomic { ACCESS; ph2 = phase };                   /* abar_internal.h:126 */
       if
       :: ph2 == ph1 ->
          res = ph1;                                     /* abar_internal.h:128 */
          assert(gsr == res || gsr == res + 1);          /* P2: phase in {S-1, S} */
          assert(STPH(sv) == LO(gsr));
          ph1 = 0; ph2 = 0; gsr = 0;                     /* dead: keep the state space small */
          break
       :: else -> skip
       fi
    od
}
#endif
/* abar__state_phase, abar_internal.h:134-137 */
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

/* abar__futex_wake_all, futex.c: touches only the address. */
inline futex_wake_all()
{
    d_step { i = 0; do :: i < NPROC -> fq[i] = 0; i++ :: else -> break od; i = 0 }
}

/* abar__futex_wait, futex.c, called with val and a deadline or none. */
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

/* block, wait.c:37-106: spin (unless PARK), then park.  Returns in r. */
inline block(tk, tmd)
{
    /* The spin loop, wait.c:53-81.  Its policy is a free choice each round:
     * ABAR_WAIT_PARK skips it, the default leaves it when the budget is
     * spent (any round), ABAR_WAIT_SPIN never leaves it.  A round whose poll
     * of the futex word (wait.c:58) finds it unchanged changes nothing but
     * the spinner's locals, so the model folds such rounds into one blocking
     * step that waits for the word to move: a spinner never released is a
     * deadlock Spin reports, not a silent cycle.  The i % 1024 look only
     * matters after 2^32 phases inside one wait (not reachable here). */
    do
    :: atomic { ACCESS; futex != FUT(tk) } ->            /* wait.c:58 */
       atomic { ACCESS; tmp = phase };                   /* wait.c:62 */
       if
       :: tmp > tk -> r = 0; goto blockdone
       :: else -> skip
       fi;
       look(r, tk);                                      /* wait.c:63 */
       if :: !PENDING(r) -> goto blockdone :: else -> skip fi
    :: tmd ->                                            /* wait.c:70-73: deadline, one more look */
       look(r, tk);
       r = (PENDING(r) -> ETIMEDOUT : r);
       goto blockdone
    :: break                                             /* wait.c:47,75: park */
    od;
    /* The park loop, wait.c:88-105. */
    do
    :: look(r, tk);                                      /* wait.c:89 */
       if :: !PENDING(r) -> goto blockdone :: else -> skip fi;
       if :: tmd -> r = ETIMEDOUT; goto blockdone :: skip fi; /* wait.c:90 */
       if
       :: r == EBUSY -> goto parkagain                   /* wait.c:91-94: yield */
       :: else -> skip
       fi;
#if MUTANT == 2
       /* bug 2: sleep without announcing PARKED */
#else
       if
       :: !(s & PARKED) ->                               /* wait.c:97-100 */
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
       futex_wait(r, FUT(tk), tmd);                      /* wait.c:101 */
       if
       :: r == ETIMEDOUT ->
          look(r, tk);                                   /* wait.c:102 */
          r = (PENDING(r) -> ETIMEDOUT : r);             /* wait.c:103 */
          goto blockdone
       :: else -> skip
       fi;
parkagain:
       skip
    od;
blockdone:
    cur = 0; s = 0; ok = 0; tmp = 0
}

/* enter, wait.c:115-139: announce, then wait out a destroy's mark. */
inline enter()
{
#if PSHARED
    atomic { ACCESS; inside++ };                         /* wait.c:126 */
#else
    atomic { ACCESS; slot[_pid] = 1 };                   /* wait.c:119, fence 122 */
#endif
    entered = 1;
    do
    :: atomic { ACCESS; !(inside & INSIDE_DEAD) } -> break /* wait.c:131 */
    :: atomic { (inside & INSIDE_DEAD) && dead } ->      /* wait.c:132: destroyed */
       entered = 0; break
    od;
    if
    :: !entered ->                                       /* wait.c:133 leave */
#if PSHARED
       atomic { inside-- }
#else
       slot[_pid] = 0
#endif
    :: else -> skip
    fi
}

/* leave, wait.c:143-151: after it this thread touches the barrier no more. */
inline leave()
{
#if PSHARED
    atomic { ACCESS; inside-- }                          /* wait.c:146 */
#else
    atomic { ACCESS; slot[_pid] = 0 }                    /* wait.c:149 */
#endif
}

/* wait_registered, wait.c:154-161 (the caller, wait_common, found the token
 * not yet complete on the release line, wait.c:169-171). */
inline wait_registered(tk, tmd)
{
    enter();                                             /* wait.c:157 */
    assert(entered);                                     /* no destroy races these waits */
    block(tk, tmd);                                      /* wait.c:158 */
    leave()                                              /* wait.c:159 */
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

/* abar__complete, arrive.c:66-110, for phase p whose last arrival made ns. */
inline complete(p, ns)
{
    atomic {                                             /* arrive.c:70-75: the completion */
        ACCESS;
        assert(arrived[p] == GEXP(p));                   /* P1: every arrival counted */
        assert(!released[p]);                            /* P1: before any release */
        compl[p]++;
        assert(compl[p] == 1)                            /* P1: exactly once */
    };
    atomic { ACCESS; next = expected - DROPS(ns) };      /* arrive.c:79 */
    if
    :: DROPS(ns) -> atomic { ACCESS; expected = next }   /* arrive.c:80 */
    :: else -> skip
    fi;
    atomic { ACCESS; phase == p };                       /* arrive.c:83: publish in order */
#if MUTANT == 1
    atomic { ACCESS; phase = p + 1; released[p] = 1 };   /* bug 1: release before the state CAS */
#endif
    atomic { ACCESS; cur_s = state };                    /* arrive.c:84 */
    do                                                   /* arrive.c:91-100 */
    :: atomic {
           ACCESS;
           if
           :: PEND(cur_s) != 0 -> cur_s = state; ok = 0  /* arrive.c:92-94: an undo pending */
           :: PEND(cur_s) == 0 && state == cur_s ->      /* arrive.c:95-98 */
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
#if MUTANT == 4
    atomic { ACCESS; futex = FUT(p + 1) };               /* bug 4: a store loses cancel's bump */
#else
    atomic { ACCESS; futex = (futex + 1) & 255 };        /* arrive.c:107 */
#endif
#if MUTANT != 1
    atomic { ACCESS; phase = p + 1; released[p] = 1 };   /* arrive.c:108: the last access */
#endif
#if MUTANT == 3
    skip;                                                /* bug 3: never wake */
#else
    if
    :: cur_s & PARKED -> futex_wake_all()                /* arrive.c:109 */
    :: else -> skip
    fi;
#endif
    cur_s = 0; next = 0; ok = 0
}

/* arrive, arrive.c:22-57: n arrivals (a drop if drp); token in tp, r = error. */
inline arrive(n, drp)
{
#if FIX_ARRIVAL_PHASE
    atomic { ACCESS; tmp = phase };                      /* arrive.c:26: before the RMW */
#endif
    if
    :: (n) == 1 && !(drp) ->                             /* arrive.c:28 */
       atomic {                                          /* arrive.c:33 fetch_sub */
           ACCESS; s = state; state = state - 1; ns = s - 1;
           if
           :: !(s & (CANC | FIN)) && PEND(s) >= 1 ->
              assert(!gcancel);                          /* P4: nothing counted after cancel */
              arrived[gS] = arrived[gS] + 1; gph = gS
           :: else -> skip
           fi
       };
       if
       :: (s & (CANC | FIN)) || PEND(s) < 1 ->           /* arrive.c:35-41: undo */
          atomic { ACCESS; state = state + 1 };
          r = ((s & (CANC | FIN)) -> ECANCELED : EINVAL)
       :: else -> r = 0
       fi
    :: else ->
       atomic { ACCESS; s = state };                     /* arrive.c:43 */
       do
       :: (s & (CANC | FIN)) -> r = ECANCELED; break     /* arrive.c:45 */
       :: !(s & (CANC | FIN)) && (n) > PEND(s) -> r = EINVAL; break /* arrive.c:48 */
       :: !(s & (CANC | FIN)) && (n) <= PEND(s) ->
          ns = s - (n) + ((drp) -> DROP_ONE : 0);        /* arrive.c:49 */
          atomic {                                       /* arrive.c:51 */
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
       tp = tmp + ((STPH(s) - tmp) & PMASK);             /* arrive.c:14-17: no access after the RMW */
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
       :: PEND(ns) == 0 -> complete(tp, ns)              /* arrive.c:55 */
       :: else -> skip
       fi
    :: else -> skip
    fi;
    ns = 0; s = 0; ok = 0
}

/* abar_cancel, lifecycle.c:96-111 */
inline cancel()
{
    atomic { ACCESS; old = state; state = state | CANC; gcancel = 1 }; /* lifecycle.c:101 */
    if
    :: old & CANC -> skip                                /* lifecycle.c:102 */
    :: else ->
#if MUTANT != 5
       atomic { ACCESS; futex = (futex + FUT_BUMP) & 255 }; /* lifecycle.c:105 */
#endif
       if
       :: (old & PARKED) || FIX_CANCEL_WAKE -> futex_wake_all() /* lifecycle.c:109 (before 8fb3cd8: only if PARKED) */
       :: else -> skip
       fi
    fi
}

/* abar_destroy, lifecycle.c:73-94 */
inline destroy()
{
    atomic { ACCESS; sread = state };                    /* lifecycle.c:78 */
    atomic { ACCESS; tmp = phase };                      /* lifecycle.c:79 */
    if
    :: COMPLETING(sread) || STPH(sread) != LO(tmp) -> r = EBUSY
    :: else ->
       atomic {                                          /* lifecycle.c:83 CAS 0 -> DEAD */
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
          /* lifecycle.c:86-90: the fence, then the hazard slots */
          atomic { ACCESS; i = 0; do :: i < NPROC && !slot[i] -> i++ :: else -> break od };
          if
          :: i < NPROC -> atomic { ACCESS; inside = inside & ~INSIDE_DEAD }; r = EBUSY
          :: else ->
#endif
             atomic { ACCESS; dead = 1 }; r = 0          /* lifecycle.c:92 */
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
    byte k = 0, op, tp, cur, ph1, ph2, gsr, next, tmp, i, gph;
    int s, ns, sread, cur_s;
    byte r;
    bool ok, timed, lastph, entered;

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
       :: op == OP_AW -> enter(); assert(entered)        /* wait.c:215 */
       :: else -> skip
       fi;
#endif
       arrive(1, op == OP_DROP);                         /* wait.c:216 / arrive.c:112,118 */
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
          block(tp, 0);                                  /* wait.c:217 */
          check_wait(tp, r, 0)
       :: r == 0 && (op == OP_SPLIT || op == OP_TIMED) ->
          do                                             /* wait.c:163-183 */
          :: atomic { ACCESS; tmp = phase };             /* wait.c:171 */
             if
             :: tp < tmp -> r = 0; tmp = 0
             :: else -> tmp = 0; wait_registered(tp, timed) /* wait.c:182 */
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
       :: op == OP_AW -> leave()                         /* wait.c:218 */
       :: else -> skip
       fi;
       if
       :: r != 0 || op == OP_DROP || op == OP_ONLY -> break
       :: else -> k++; op = 0; tp = 0; timed = 0; cur = 0; s = 0; entered = 0
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
/* A non-participant: abar_current, then abar_wait (wait.c:197-205, 163-183). */
active proctype observer()
{
    byte tp, cur, ph1, ph2, gsr, tmp, i;
    int s;
    byte r;
    bool ok, entered;

    snapshot(cur, s);                                    /* wait.c:202 */
    if
    :: (s & CANC) && !COMPLETING(s) -> r = ECANCELED     /* wait.c:203 */
    :: else -> r = 0; tp = STATE_PHASE(cur, s)           /* wait.c:204 */
    fi;
    if
    :: r == 0 && tp < NPH ->
       atomic { ACCESS; tmp = phase };                   /* wait.c:171 */
       if
       :: tp < tmp -> r = 0; tmp = 0
       :: else -> tmp = 0; wait_registered(tp, 0)        /* wait.c:182 */
       fi;
       check_wait(tp, r, 0)
    :: else -> skip
    fi;
    odone = 1
}
#endif
