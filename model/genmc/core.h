/*
 * core.h - the core's sources, unmodified, in one translation unit with the
 * system shim (shim.h) and the backend it stands for.  A client includes
 * this, then calls abar_genmc_setup() first thing in main().
 *
 * The core's own constructors (the hazard fence's choice, the CPU count)
 * are run by abar_genmc_setup(): GenMC runs no constructors.
 */
#ifndef ABAR_GENMC_CORE_H
#define ABAR_GENMC_CORE_H

#include "shim.h"

#include "abar_internal.h"
#include "os.h"

#ifndef ABAR_GENMC_NCPU
#define ABAR_GENMC_NCPU 4u
#endif

/* ---- the backend (os.h), as shim.h describes ---------------------------- */

void abar__futex_wake_all(_Atomic uint32_t *word, bool pshared)
{
    (void)word;
    (void)pshared;
}

int abar__futex_wait(_Atomic uint32_t *word, uint32_t val, bool pshared,
                     const struct timespec *abstime)
{
    (void)pshared;
    (void)abstime;
    /* a spin loop GenMC turns into "until the word has changed" */
    while (atomic_load_explicit(word, memory_order_relaxed) == val) {}
    return 0;
}

/* ABAR_GENMC_ASYM (shim.h, membarrier): 1, the Linux backend's choice:
 * waiters keep only the compiler's order, so no seq_cst fence of theirs
 * stands in for the release an arrival needs; 0 for the destroy clients,
 * whose hazard handshake needs membarrier's effect on the other threads,
 * which the model can only give as a fence on both sides. */
#ifndef ABAR_GENMC_ASYM
#define ABAR_GENMC_ASYM 1
#endif
bool abar__os_membarrier_register(void) { return ABAR_GENMC_ASYM; }
void abar__os_membarrier(void) { atomic_thread_fence(memory_order_seq_cst); }
unsigned abar__os_ncpu(void) { return ABAR_GENMC_NCPU; }
int abar__os_cpus(int *cpus, int max)
{
    if (cpus && max > 0) cpus[0] = 0;
    return 1;
}
bool abar__os_pin(void *attr, int cpu)
{
    (void)attr;
    (void)cpu;
    return false;
}
void abar__os_nap(uint64_t ns) { (void)ns; }
unsigned abar__cgroup_cpus(const char *root)
{
    (void)root;
    return 0;
}
bool abar__prefetchw_ok; /* cpus.c's: no PREFETCHW (its asm is not GenMC's) */

/* ---- the core ------------------------------------------------------------ */

#include "arrive.c"
#include "futex.c"
#include "hazard.c"
#include "lifecycle.c"
/* policy.c (when waiters stop spinning early) is left out: its words are
 * relaxed hints that only set a spin budget, and the clients' waiters park
 * at once (spin_ns_cache 0 below).  In the checks its sampling code cost
 * GenMC 35 times the time of the protocol itself (the client `one`: 139 s
 * against 4 s, the same 40 executions).  These stand in for it. */
_Atomic uint64_t abar__calm_until;
bool abar__park_soon_slow(void) { return false; }
void abar__spin_gap(uint64_t now, uint64_t gap) { (void)now; (void)gap; }
void abar__spin_slept(uint64_t parked, uint64_t woke, uint64_t now)
{
    (void)parked;
    (void)woke;
    (void)now;
}
void abar__spin_phase(const void *b, uint64_t raw, bool soon)
{
    (void)b;
    (void)raw;
    (void)soon;
}
ABAR__TLS unsigned abar__lean_waits;
void abar__spin_lean_sample(const void *b, uint64_t raw)
{
    (void)b;
    (void)raw;
}
#include "tree.c"
#include "wait.c"
#include "arrive_wait.c"

/* The constructors, and the caches a client may preset (tree_min_cache:
 * the smallest expected count with leaves, as ABAR_TREE_MIN sets it). */
static inline void abar_genmc_setup(void)
{
    hazard_setup();
    ncpu_at_load();
    atomic_store_explicit(&spin_ns_cache, 0, memory_order_relaxed);
}

#endif
