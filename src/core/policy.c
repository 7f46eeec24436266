/* policy.c - the host-wide part of the wait policy: when to stop spinning.
 *
 * Spinning pays when the thread waited for is running and arrives soon.  It
 * does not where the host takes CPUs away: a hypervisor that takes a vCPU
 * for milliseconds takes an idle one first (a halted vCPU's physical CPU is
 * free), so waiters that spin keep every vCPU busy and the host then takes
 * one whose thread the phase needs, and the phase stalls for the whole
 * burst, every few phases.  Waiters that park leave their vCPUs idle for
 * the host to take instead: a phase then costs a wake-up (0.1-0.3 ms on the
 * VMs where spinning took 2-3 ms a phase; docs/lab/steal.md).
 *
 * So the waiters look for two signs, each as cheap as what they do anyway:
 *  - a spinner's clock reads, 64 rounds apart, ABAR__GAP_NS or more apart:
 *    it was not running meanwhile: its CPU was taken (by the host, or by
 *    another thread of this machine: a CPU shared either way);
 *  - a sleeper released ABAR__STALL_NS or more after it parked: the phase
 *    stalled far longer than a wake-up, and its spin was wasted.
 * ABAR__SIGNS of them, each within ABAR__SIGN_WINDOW_NS of the last, start
 * a park-soon stretch: every waiter of every barrier of the process spins
 * only as long as a wake-up takes (futex.c abar__spin_lean: a few µs where
 * wake-ups are fast) and parks, for ABAR__CALM_NS.  When it ends,
 * waiters spin again: where spinning pays again nothing brings the stretch
 * back; where the host still takes CPUs the signs come back within a few
 * phases and start a stretch twice as long (up to 32 times), so the tries
 * cost less and less.  A stretch runs the length it was given when it
 * started: signs inside it do not extend it, so every stretch ends and is
 * judged (below).
 *
 * And a stretch must pay.  Where the thread a stolen CPU runs still gets
 * time now and then (a busier process of the same machine), or where the
 * host takes little, spinning can win: a phase stalled now and then costs
 * less than a wake-up every phase.  So each waiter counts how fast its own
 * phases go: at each wait that outlives its first spin, and at one in 64
 * of those that do not (where spinning works, they are nearly all), the
 * phases of the same barrier since its last such wait (the token's phase
 * number tells) and the time since.  A stretch whose phases went 1.5 times
 * slower than those of the spinning before it (the spinning stretch, or
 * the spinning since the first of the signs that started it, whichever
 * went slower: where the host takes CPUs in bursts, only the latter is of
 * the burst the stretch runs in) makes the next signs be ignored for a
 * while (ABAR__CALM_NS, doubled each time again in a row); one that did as
 * well or better keeps them heard.  A stretch already 4 times slower, over
 * enough samples and 10 ms, is judged then and there: a team on every CPU
 * of a quiet machine gets signs from the machine's own noise, and there a
 * stretch costs a round of wake-ups a phase (T = 32: 8 µs a phase in the
 * median where spinning took 2).  Oversubscribed waits (more threads than
 * CPUs) yield as they spin, so their clock jumps say nothing; their late
 * wake-ups are signs, they count phases, and they park soon in a stretch
 * as every other wait does (wait.c).
 *
 * The state is the process's, not a barrier's: the host takes CPUs from
 * the whole process.  All of it is hints: relaxed, racy updates lose at
 * most a sign. */
#include "abar_internal.h"
#include "policy.h"

_Atomic uint64_t abar__calm_until;
static _Atomic uint64_t calm_end;   /* when the last stretch ended or ends, 0 if none yet */
static _Atomic uint64_t calm_start; /* when the last stretch started */
static _Atomic uint32_t calm_shift; /* the next stretch lasts ABAR__CALM_NS << this */
static _Atomic uint64_t sign_at;    /* when the last sign was seen */
static _Atomic uint32_t signs;      /* signs in a row, each within the window of the last */
static _Atomic uint64_t wph[2];     /* phases counted in the current stretch: [1] park-soon, [0] spin */
static _Atomic uint64_t wns[2];     /* over this much of the threads' time, ns */
static _Atomic uint32_t wn[2];      /* samples */
static _Atomic uint64_t wrate[2];   /* the last stretch of each kind: phases per second, 0 if unknown */
static _Atomic uint64_t deaf_until; /* signs are ignored until then: stretches did not pay */
static _Atomic uint32_t deaf_shift; /* the next such while lasts ABAR__CALM_NS << this */
/* What a stretch is judged against: the rate of the spinning stretch
 * before it, or, if lower, that of the spinning since the first sign of
 * the series that started it.  Where the host takes CPUs in bursts, the
 * spinning stretch is mostly the quiet time before a burst, and the
 * stretch runs in the burst: the spinning the signs came in says what
 * spinning does there. */
static _Atomic uint64_t spin_ref;
static _Atomic uint64_t sign_ph, sign_ns; /* the spinning sums at the series' first sign */

static _Atomic uint32_t epoch;      /* stretches closed so far: a count names the one it is of */
static _Atomic uint64_t tally[ABAR__T_N]; /* policy.h abar__policy_tally; events, not per wait */

static void count(int k) { atomic_fetch_add_explicit(&tally[k], 1, memory_order_relaxed); }

void abar__policy_tally(uint64_t out[ABAR__T_N])
{
    for (int k = 0; k < ABAR__T_N; k++) out[k] = atomic_load_explicit(&tally[k], memory_order_relaxed);
}

/* Phases per second, plus 1 (0 is "unknown"), at most 1e18 + 1: a phase
 * number that jumped, as one set by the caller can, must not overflow the
 * conversion.  ns > 0. */
static uint64_t rate(uint64_t ph, uint64_t ns)
{
    const double x = (double)ph * 1e9 / (double)ns;
    return (x < 1e18 ? (uint64_t)x : 1000000000000000000u) + 1;
}

/* Ends a stretch of kind k (1 park-soon, 0 spin): its phase rate. */
static uint64_t close_stretch(int k)
{
    atomic_fetch_add_explicit(&epoch, 1, memory_order_relaxed);
    const uint32_t n = atomic_exchange_explicit(&wn[k], 0, memory_order_relaxed);
    const uint64_t ph = atomic_exchange_explicit(&wph[k], 0, memory_order_relaxed);
    const uint64_t ns = atomic_exchange_explicit(&wns[k], 0, memory_order_relaxed);
    const uint64_t r = n >= ABAR__RATE_WAITS && ns >= ABAR__RATE_NS ? rate(ph, ns) : 0;
    /* too few samples: the last rate measured stands (spinning that works
     * leaves few waits past the first spin to sample) */
    if (r) atomic_store_explicit(&wrate[k], r, memory_order_relaxed);
    return r ? r : atomic_load_explicit(&wrate[k], memory_order_relaxed);
}

/* A park-soon stretch is over at `now`: did it pay? */
static void judge_stretch(uint64_t now)
{
    const uint64_t park = close_stretch(1);
    const uint64_t spin = atomic_load_explicit(&spin_ref, memory_order_relaxed);
    uint32_t sh = atomic_load_explicit(&deaf_shift, memory_order_relaxed);
    if (park && spin && spin * ABAR__WORSE_DEN > park * ABAR__WORSE_NUM) {
        count(ABAR__T_UNPAID);
        atomic_store_explicit(&deaf_until, now + ((uint64_t)ABAR__CALM_NS << sh), memory_order_relaxed);
        if (sh < ABAR__CALM_SHIFT_MAX) atomic_store_explicit(&deaf_shift, sh + 1, memory_order_relaxed);
        /* and the next stretch, a try, is a short one */
        atomic_store_explicit(&calm_shift, 0, memory_order_relaxed);
    } else if (park && spin) {
        atomic_store_explicit(&deaf_shift, 0, memory_order_relaxed);
    }
}

/* The stretch that was to end at u is over at `now`: one thread (the one
 * whose CAS takes it) judges it, and meanwhile abar__calm_until reads
 * ABAR__JUDGING, so a sign seen then cannot start the next stretch before
 * the verdict (a stretch that did not pay makes the next signs unheard). */
static void end_stretch(uint64_t u, uint64_t now, bool early)
{
    if (!atomic_compare_exchange_strong_explicit(&abar__calm_until, &u, ABAR__JUDGING,
                                                 memory_order_relaxed, memory_order_relaxed))
        return; /* another thread ends it, or a stretch started meanwhile */
    if (early) {
        atomic_store_explicit(&calm_end, now, memory_order_relaxed);
        count(ABAR__T_EARLY);
    }
    judge_stretch(now);
    atomic_store_explicit(&abar__calm_until, 0, memory_order_relaxed);
}

bool abar__park_soon_slow(void)
{
    const uint64_t u = atomic_load_explicit(&abar__calm_until, memory_order_relaxed);
    if (u == 0 || u == ABAR__JUDGING) return false;
    const uint64_t now = abar__now_ns();
    if (now < u) return true;
    end_stretch(u, now, false); /* over: spin again */
    return false;
}

static void sign(uint64_t now)
{
    count(ABAR__T_SIGNS);
    const uint64_t last = atomic_load_explicit(&sign_at, memory_order_relaxed);
    atomic_store_explicit(&sign_at, now, memory_order_relaxed);
    const uint32_t n = now - last < ABAR__SIGN_WINDOW_NS
                           ? atomic_load_explicit(&signs, memory_order_relaxed) + 1 : 1;
    if (n < ABAR__SIGNS) {
        atomic_store_explicit(&signs, n, memory_order_relaxed);
        if (n == 1 && atomic_load_explicit(&abar__calm_until, memory_order_relaxed) == 0) {
            /* the spinning since this sign is measured apart: the sums now,
             * and no count begun before it */
            atomic_fetch_add_explicit(&epoch, 1, memory_order_relaxed);
            atomic_store_explicit(&sign_ph, atomic_load_explicit(&wph[0], memory_order_relaxed),
                                  memory_order_relaxed);
            atomic_store_explicit(&sign_ns, atomic_load_explicit(&wns[0], memory_order_relaxed),
                                  memory_order_relaxed);
        }
        return;
    }
    atomic_store_explicit(&signs, 0, memory_order_relaxed);
    if (now < atomic_load_explicit(&deaf_until, memory_order_relaxed)) {
        count(ABAR__T_UNHEARD);
        return;
    }
    const uint64_t was = atomic_load_explicit(&abar__calm_until, memory_order_relaxed);
    /* A stretch that is on runs its length and no longer: signs inside it
     * would otherwise extend it for as long as they come (the stretch's own
     * wake-ups can bring them), and it would never end to be judged. */
    if (was == ABAR__JUDGING || (was != 0 && now < was)) return;
    if (was != 0) { /* one over but not yet seen so: judged first */
        end_stretch(was, now, false);
        if (atomic_load_explicit(&abar__calm_until, memory_order_relaxed) != 0) return;
        if (now < atomic_load_explicit(&deaf_until, memory_order_relaxed)) { /* it did not pay */
            count(ABAR__T_UNHEARD);
            return;
        }
    }
    /* a spinning stretch ends here; the spinning since the series' first
     * sign, if there is a rate's worth, judges the stretch if slower */
    const uint64_t ph = atomic_load_explicit(&wph[0], memory_order_relaxed) -
                        atomic_load_explicit(&sign_ph, memory_order_relaxed);
    const uint64_t ns = atomic_load_explicit(&wns[0], memory_order_relaxed) -
                        atomic_load_explicit(&sign_ns, memory_order_relaxed);
    uint64_t ref = close_stretch(0);
    if (ns >= ABAR__SAMPLE_NS && ns < ((uint64_t)1 << 62)) { /* not a snapshot of sums since closed */
        const uint64_t since = rate(ph, ns);
        if (ref == 0 || since < ref) ref = since;
    }
    atomic_store_explicit(&spin_ref, ref, memory_order_relaxed);
    atomic_store_explicit(&sign_ph, 0, memory_order_relaxed); /* the sums start afresh */
    atomic_store_explicit(&sign_ns, 0, memory_order_relaxed);
    const uint64_t end = atomic_load_explicit(&calm_end, memory_order_relaxed);
    uint32_t sh = atomic_load_explicit(&calm_shift, memory_order_relaxed);
    if (end != 0 && now >= end) { /* a stretch ended: how soon the signs came back */
        if (now - end < (uint64_t)ABAR__CALM_NS << sh) sh = sh < ABAR__CALM_SHIFT_MAX ? sh + 1 : sh;
        else if (now - end >= ABAR__CALM_RESET_NS) sh = 0;
        atomic_store_explicit(&calm_shift, sh, memory_order_relaxed);
    }
    const uint64_t until = now + ((uint64_t)ABAR__CALM_NS << sh);
    atomic_store_explicit(&calm_end, until, memory_order_relaxed);
    atomic_store_explicit(&calm_start, now, memory_order_relaxed);
    atomic_store_explicit(&abar__calm_until, until, memory_order_relaxed);
    count(ABAR__T_STRETCHES);
}

void abar__spin_gap(uint64_t now, uint64_t gap)
{
    if (gap >= ABAR__GAP_NS) sign(now);
}

void abar__spin_slept(uint64_t parked, uint64_t woke, uint64_t now)
{
    /* woke before parked: a wake of another phase (or a cancel's, or none):
     * says nothing about this one */
    if (woke >= parked && woke - parked >= ABAR__STALL_NS) sign(now);
}

/* The thread's own count: phases of one barrier since a time, in one kind
 * of stretch, over `n` waits; handed to the shared sums every ABAR__SAMPLE
 * waits, once it spans ABAR__SAMPLE_NS (where spinning works, waits that
 * outlive the first spin are rare and far apart), and when the thread
 * turns to another barrier or kind: every count is handed over, whatever
 * its length, so the sums are not weighted to the long ones (a count kept
 * only once long would mostly be the ones that held a stall), unless the
 * stretch it counted in was closed meanwhile (its rate is taken). */
static _Thread_local struct {
    const void *b;
    uint64_t raw, at, ph, ns;
    unsigned n;
    uint32_t epoch; /* the stretch it counts in (a count of one closed since is dropped) */
    bool soon;
} mine;

/* A park-soon stretch whose phases, over a rate's worth of samples and
 * ABAR__EARLY_NS of its time, go ABAR__EARLY_WORSE times slower than the
 * spinning it is judged against (spin_ref) is judged at once: where
 * spinning works (every CPU busy, a few signs from the machine's own
 * noise), each phase of a stretch costs a round of wake-ups, a hundred
 * times a spinning phase, and 50 ms of them would cost more than the
 * stretch could ever save. */
static void judge_early(uint64_t now)
{
    const uint64_t spin = atomic_load_explicit(&spin_ref, memory_order_relaxed);
    const uint64_t ns = atomic_load_explicit(&wns[1], memory_order_relaxed);
    if (spin == 0 || ns < ABAR__RATE_NS || atomic_load_explicit(&wn[1], memory_order_relaxed) < ABAR__RATE_WAITS)
        return;
    const double park = (double)atomic_load_explicit(&wph[1], memory_order_relaxed) * 1e9 / (double)ns;
    if (park * ABAR__EARLY_WORSE >= (double)spin) return;
    const uint64_t u = atomic_load_explicit(&abar__calm_until, memory_order_relaxed);
    if (u == 0 || u == ABAR__JUDGING || now >= u) return; /* none on, or its end is near */
    if (now - atomic_load_explicit(&calm_start, memory_order_relaxed) < ABAR__EARLY_NS) return;
    end_stretch(u, now, true);
}

static void hand_over(uint64_t now)
{
    if (mine.n != 0 && mine.epoch == atomic_load_explicit(&epoch, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&wph[mine.soon], mine.ph, memory_order_relaxed);
        atomic_fetch_add_explicit(&wns[mine.soon], mine.ns, memory_order_relaxed);
        atomic_fetch_add_explicit(&wn[mine.soon], mine.n, memory_order_relaxed);
        if (mine.soon) judge_early(now);
    }
    mine.ph = mine.ns = 0;
    mine.n = 0;
}

void abar__spin_phase(const void *b, uint64_t raw, bool soon)
{
    const uint64_t now = abar__now_ns();
    if (b == mine.b && soon == mine.soon && raw > mine.raw) {
        mine.ph += raw - mine.raw;
        mine.ns += now - mine.at;
        if (++mine.n == ABAR__SAMPLE || mine.ns >= ABAR__SAMPLE_NS) hand_over(now);
    } else { /* another barrier, or the kind changed: a new count */
        hand_over(now);
    }
    mine.b = b;
    mine.raw = raw;
    mine.at = now;
    mine.soon = soon;
    if (mine.n == 0) mine.epoch = atomic_load_explicit(&epoch, memory_order_relaxed);
}

ABAR__TLS unsigned abar__lean_waits;

void abar__spin_lean_sample(const void *b, uint64_t raw)
{
    /* a waiter told to spin has no policy to judge (abar__block's `adapts`;
     * the callers leave out those told to park) */
    if (((const struct abar_impl *)b)->flags & ABAR_WAIT_SPIN) return;
    abar__spin_phase(b, raw, abar__park_soon());
}
