/* wait.h - the waits' shared steps: the release check, the first spin,
 * and abar__block (wait.c), which spins on and parks; arrive_wait.c builds
 * abar_arrive_and_wait on them. */
#ifndef ABAR_WAIT_H
#define ABAR_WAIT_H

#include "abar_internal.h"
#include "policy.h"

/* Rounds of the first, lean spin (first_polls). */
#define ABAR__FIRST_POLLS 128u

/* Whether phase t.raw has been released.  acquire: pairs with the
 * completer's release store of phase. */
static inline bool released(const struct abar__release *rw, abar_token_t t)
{
    return atomic_load_explicit(&rw->phase, memory_order_acquire) > t.raw;
}

/* When the barrier expects more threads than there are CPUs, spinning
 * would steal the CPU from the threads we wait for. */
static inline bool oversubscribed_by(const struct abar_impl *b)
{
    return atomic_load_explicit(&b->expected, memory_order_relaxed) > abar__ncpu_fast();
}

/* Most waits end within a few hundred rounds: poll the release alone first,
 * with nothing else between seeing it and returning (a cancel is seen by
 * abar__block's loop, at most this many rounds later).  Not for timed waits
 * (their deadline is checked from the first round), waiters told to park,
 * or an oversubscribed barrier.  True if the phase was released; one such
 * wait in 64 is a sample of how fast phases go (policy.c).  first_polls is
 * its rounds alone (pair_arrive_and_wait has made the checks). */
static inline bool first_polls(const struct abar__release *rw, abar_token_t t)
{
    for (unsigned i = 0; i < ABAR__FIRST_POLLS; i++) {
        if (released(rw, t)) return true;
        abar__pause();
    }
    return false;
}
static inline bool lean_spin(const struct abar_impl *b, abar_token_t t)
{
    if ((b->flags & ABAR_WAIT_PARK) || oversubscribed_by(b)) return false;
    return first_polls(rel((struct abar_impl *)b), t) && abar__spin_lean_waited(b, t.raw) &&
           abar__prefetch_next_arrival(b);
}

/* Blocks until phase t.raw completes (registered in `inside` by the caller),
 * after lean_spin unless `leaned` (the caller ran it) or timed (wait.c). */
int abar__block(struct abar_impl *b, abar_token_t t, const struct timespec *abstime, bool leaned);

#endif
