/*
 * mpi_flags.pml - the park and wake protocol of abar_mpi's flags engine
 * (src/mpi/engine_flags.c), checked with Spin by model/run_model.sh.
 *
 * R ranks, one participant each, run PH phases: arrive (publish: store the
 * rank's flag, then look at `sleepers`, and if anyone sleeps bump `futex`
 * and wake), then wait until every flag is past the phase, spinning or
 * parking.  A parker reads `futex`, counts itself in `sleepers`, looks at
 * the flags (and its rank's cancel) again, and sleeps while `futex` still
 * holds what it read.  With CANCEL (R = 2), rank 1 never arrives in the
 * last phase and, once rank 0 has arrived there, a canceller cancels rank
 * 0 (set its bit, bump, wake), so rank 0's last wait can only end by the
 * cancel.
 *
 * Sequential consistency: each statement is one atomic step, in program
 * order.  The C gets that order for its two store-then-load pairs (the
 * arrival's flag then `sleepers`, the parker's `sleepers` then the flags)
 * from a fence on each side, the arrival's made free by membarrier
 * (engine_flags.c says why that is enough); this model checks the logic
 * on top of it.  A sleeper is woken when `futex` moves (every waker bumps
 * it before FUTEX_WAKE; a sleeper that reads the bumped value never sleeps).
 *
 * Properties: a wait returns 0 only once every flag is past its phase
 * (assertion); no process is left asleep (an invalid end state, which is
 * how a lost wake-up shows).
 *
 * With DESTROY, another scenario (R = 2, PH = 1): rank 0 has two threads,
 * an arriver and a destroyer, and rank 1 never arrives.  The arriver is
 * abar_mpi__flags_arrive: it registers in `inside`, refuses if cancelled,
 * takes the phase (`next`), leaves `inside`, and only then publishes (its
 * flag, the look at `sleepers`, and `published`, its last touch of the
 * segment and of m).  The destroyer is abar_mpi_destroy, started once the
 * arriver is inside its call (a destroy racing a call that has not yet
 * registered is the caller's race, as in the core): it may cancel first,
 * then says EBUSY while anyone is inside, or while this rank's flag is
 * ahead of the completed phases and there is no cancel; otherwise it
 * waits for `published` to catch up with `next`, and frees.  Property:
 * the arriver touches nothing after the free (assertion).  A hierarchical
 * rank publishes from its local barrier's completion, inside an arrival
 * that holds `inside` throughout, so the first check covers it.
 *
 * Mutants (run_model.sh must catch each):
 *   1  the arrival looks at `sleepers` before it stores its flag
 *   2  the parker reads `futex` after its second look at the flags
 *   3  the cancel does not bump the word
 *   4  (DESTROY) destroy does not wait for `published`
 *   5  (DESTROY) the arrival stores `published` before its flag
 */
#ifndef R
#define R 2
#endif
#ifndef PH
#define PH 2
#endif
#ifndef CANCEL
#define CANCEL 0
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef DESTROY
#define DESTROY 0
#endif

byte flag[R];     /* phases each rank has arrived in */
byte futex;       /* bumped by every waker */
byte sleepers;    /* parkers, registered before their second look */
bool cancelled;   /* rank 0's cancel bit */

#if R == 2
#define DONE(k) (flag[0] > (k) && flag[1] > (k))
#elif R == 3
#define DONE(k) (flag[0] > (k) && flag[1] > (k) && flag[2] > (k))
#else
#error "R: 2 or 3"
#endif

inline publish(r, v)
{
#if MUTANT == 1
    if
    :: sleepers > 0 -> flag[r] = v; futex++
    :: else -> flag[r] = v
    fi
#else
    flag[r] = v;
    if
    :: sleepers > 0 -> futex++
    :: else -> skip
    fi
#endif
}

proctype rank(byte r)
{
    byte k = 0, v;
    bool gone = false;
    do
    :: k < PH && !(CANCEL && r == R - 1 && k == PH - 1) && !(r == 0 && cancelled) ->
        publish(r, k + 1);
        do
        :: DONE(k) -> assert(DONE(k)); break
        :: r == 0 && cancelled -> gone = true; break
        :: !DONE(k) -> /* spin: look again */ skip
        :: !DONE(k) ->  /* park */
#if MUTANT == 2
            sleepers++;
            if
            :: DONE(k) || (r == 0 && cancelled) -> sleepers--
            :: else -> v = futex; (futex != v); sleepers--
            fi
#else
            v = futex;
            sleepers++;
            if
            :: DONE(k) || (r == 0 && cancelled) -> sleepers--
            :: else -> (futex != v); sleepers--
            fi
#endif
        od;
        if
        :: gone -> break
        :: else -> k++
        fi
    :: else -> break
    od
}

proctype canceller()
{
    (flag[0] == PH); /* rank 0 has arrived in the last phase (rank 1 never will) */
    cancelled = true;
#if MUTANT != 3
    futex++
#endif
}

#if DESTROY
byte inside;      /* rank 0's calls registered */
byte next0;       /* phases rank 0 has arrived in (m->next) */
byte published0;  /* arrivals done with the segment (m->published) */
bool freed;       /* the destroyer freed m and unmapped the segment */
bool started;     /* the arriver is inside its call */

proctype arriver()
{
    byte k;
    atomic { inside++; started = true };
    if
    :: cancelled -> inside--; goto out  /* refused: ECANCELED */
    :: else -> skip
    fi;
    k = next0;
    next0 = k + 1;
    inside--;
#if MUTANT == 5
    assert(!freed); published0 = k + 1;
    assert(!freed); flag[0] = k + 1;
#else
    assert(!freed); flag[0] = k + 1;
#endif
    assert(!freed);
    if
    :: sleepers > 0 -> futex++
    :: else -> skip
    fi;
#if MUTANT != 5
    assert(!freed); published0 = k + 1;
#endif
out:
    skip
}

proctype destroyer()
{
    (started);
    if
    :: cancelled = true  /* abar_mpi_cancel, then destroy */
    :: skip
    fi;
    if
    :: inside != 0 -> goto busy
    :: else -> skip
    fi;
    /* in flight: this rank's flag ahead of the completed phases (rank 1
     * never arrives: none complete) */
    if
    :: next0 > 0 && !cancelled -> goto busy
    :: else -> skip
    fi;
#if MUTANT != 4
    (published0 == next0);
#endif
    freed = true;
busy:
    skip
}
#endif

init
{
#if DESTROY
    atomic { run arriver(); run destroyer() }
#else
    atomic {
        byte i = 0;
        do
        :: i < R -> run rank(i); i++
        :: else -> break
        od;
        if
        :: CANCEL -> run canceller()
        :: else -> skip
        fi
    }
#endif
}
