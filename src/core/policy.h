/* policy.h - when waiters stop spinning early: the host-wide part of the
 * wait policy (policy.c).  The per-barrier spin budget is futex.c's. */
#ifndef ABAR_POLICY_H
#define ABAR_POLICY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* A spinner's clock reads, 64 rounds apart, further apart than this: the
 * thread did not run meanwhile (its CPU was taken). */
#define ABAR__GAP_NS 50000u
/* A release this long after a waiter parked: the phase stalled far longer
 * than a wake-up, and spinning through it would have been wasted. */
#define ABAR__STALL_NS 1000000u
/* Signs of either kind, this many, each within the window of the last,
 * start a park-soon stretch. */
#define ABAR__SIGNS 3u
#define ABAR__SIGN_WINDOW_NS 20000000u
/* A park-soon stretch lasts ABAR__CALM_NS, doubled each time signs start
 * one again within that long after the last one ended (up to
 * ABAR__CALM_SHIFT_MAX doublings), back to the base when they come a
 * second or more after it. */
#define ABAR__CALM_NS 50000000u
#define ABAR__CALM_SHIFT_MAX 5u
#define ABAR__CALM_RESET_NS 1000000000u
/* A stretch must pay: if the spinning stretch before it completed phases
 * 1.5 times (3/2) as fast, signs are ignored for ABAR__CALM_NS, doubled
 * each time that happens again in a row (up to ABAR__CALM_SHIFT_MAX
 * doublings).  A rate needs ABAR__RATE_WAITS waits that outlived the
 * first spin, spanning ABAR__RATE_NS of the threads' time in all; a
 * stretch with fewer keeps the last rate measured for its kind.  A thread
 * hands its count over every ABAR__SAMPLE waits or ABAR__SAMPLE_NS. */
#define ABAR__WORSE_NUM 3u
#define ABAR__WORSE_DEN 2u
#define ABAR__RATE_WAITS 8u
#define ABAR__RATE_NS 2000000u
#define ABAR__SAMPLE 8u
#define ABAR__SAMPLE_NS 1000000u
/* Where spinning works few waits outlive the first spin: one wait in
 * ABAR__LEAN_EVERY of those its first spin released is a sample too, so
 * that spinning has a rate to judge a stretch against. */
#define ABAR__LEAN_EVERY 64u
/* A stretch whose phases already go ABAR__EARLY_WORSE times slower than
 * spinning's, over a rate's worth of samples and at least ABAR__EARLY_NS
 * since it started, ends there (judged, as at its end), not after its
 * whole length.  (The samples' time is summed over threads: with 24 of
 * them a rate's worth takes 0.1 ms, too short a look where the host takes
 * CPUs in bursts of milliseconds.) */
#define ABAR__EARLY_WORSE 4u
#define ABAR__EARLY_NS 10000000u

/* When the current park-soon stretch ends (ns, abar__now_ns), 0 if none,
 * ABAR__JUDGING while the one that ended is judged (policy.c). */
#define ABAR__JUDGING 1u
extern _Atomic uint64_t abar__calm_until;

bool abar__park_soon_slow(void);

/* Whether a waiter should spin only as long as a wake-up takes (futex.c
 * abar__spin_lean) and then park: inside a park-soon stretch.  relaxed: a
 * hint. */
static inline bool abar__park_soon(void)
{
    return atomic_load_explicit(&abar__calm_until, memory_order_relaxed) != 0 && abar__park_soon_slow();
}

/* What the policy did since the process began, for a lab to print beside
 * its rows (bench/core/abar_bench.c's "policy" rows): signs seen, signs
 * that would have started a stretch but were not heard (a stretch that
 * did not pay made the policy deaf), stretches begun, stretches ended
 * early (far worse than spinning), stretches judged not to have paid. */
enum { ABAR__T_SIGNS, ABAR__T_UNHEARD, ABAR__T_STRETCHES, ABAR__T_EARLY, ABAR__T_UNPAID, ABAR__T_N };
void abar__policy_tally(uint64_t out[ABAR__T_N]);

/* A spinner saw its clock jump by `gap` ns at `now` (abar__block). */
void abar__spin_gap(uint64_t now, uint64_t gap);

/* A sleeper is back from FUTEX_WAIT at `now`, having parked at `parked`,
 * woken by the completer's wake noted at `woke` (abar__block). */
void abar__spin_slept(uint64_t parked, uint64_t woke, uint64_t now);

/* A wait of phase `raw` of barrier `b` outlived the first spin (abar__block);
 * `soon`: it parks soon (a stretch is on). */
void abar__spin_phase(const void *b, uint64_t raw, bool soon);

/* A wait of phase `raw` of barrier `b` ended in its first spin (wait.c):
 * one in ABAR__LEAN_EVERY is a sample (abar__spin_lean_sample).  The count
 * is the thread's; the branch is taken once in 64 waits. */
extern ABAR__TLS unsigned abar__lean_waits;
void abar__spin_lean_sample(const void *b, uint64_t raw);
/* Returns true, for wait.h lean_spin's expression. */
static inline bool abar__spin_lean_waited(const void *b, uint64_t raw)
{
    if (__builtin_expect(++abar__lean_waits % ABAR__LEAN_EVERY == 0, 0)) abar__spin_lean_sample(b, raw);
    return true;
}

#endif
