/*
 * shim.h - what stands in, under GenMC, for the calls into the system that
 * GenMC cannot run.  Included first by every client (before the core's
 * sources, model/genmc/core.h), so that the core's own code is checked
 * unmodified; only the operating-system backend (os_futex.c, os_linux.c,
 * cpus.c) is replaced, by the functions below.
 *
 *   futex wait   returns once the word no longer holds the value given: a
 *                wake-up after every change of the word, which is what a
 *                FUTEX_WAKE after that change gives (the kernel's check of
 *                the value and its queueing are atomic with the wake).  A
 *                waiter whose word nobody changes blocks for good, and GenMC
 *                counts that execution as blocked, not as an error, unless
 *                run with --check-liveness: a plain run does not report a
 *                lost wake-up (docs/lab/genmc.md).  A spurious return would
 *                only run the caller's loop again, which re-reads every
 *                word; it is not modelled (it makes that loop unbounded).
 *   futex wake   nothing: the change of the word is the wake.
 *   membarrier   a seq_cst fence in the caller (abar__os_membarrier).  It
 *                makes every running thread execute a full fence, which
 *                the model cannot express, so it is offered only where
 *                that does not matter (core.h, ABAR_GENMC_ASYM): the
 *                waiters then keep only the compiler's order, as on Linux;
 *                the destroy clients are built without it, and both halves
 *                of the hazard fence are seq_cst fences there, as on the
 *                portable backend (the C11 equal of the pair).
 *   the CPUs     ABAR_GENMC_NCPU (4): no barrier of a client is
 *                oversubscribed, so waiters take the usual paths.
 *   the clock    always 0: no spin budget ever runs out by time, and none
 *                is used (the clients' barriers park at once, or spin on the
 *                first polls only).
 *   memset       left out (below).
 *   getenv       nothing set; the caches it fills are set by the clients
 *                where they matter (the tree's threshold).
 *   pthread_once, keys, atfork, getpid, sched_yield: no-ops (thread exit
 *                and fork are not modelled; a yield is a scheduling hint).
 */
#ifndef ABAR_GENMC_SHIM_H
#define ABAR_GENMC_SHIM_H

#include <genmc.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* GenMC's errno.h stops at ERANGE: Linux's values for the rest the core uses. */
#ifndef EDEADLK
#define EDEADLK 35
#endif
#ifndef ETIMEDOUT
#define ETIMEDOUT 110
#endif
#ifndef ECANCELED
#define ECANCELED 125
#endif

/* A signal fence orders this thread against its own signal handlers: the
 * compiler's order only, which GenMC's threads always keep.  GenMC would
 * take it for a thread fence (seq_cst: also a release and an acquire
 * fence), an order the core never asked for. */
#undef atomic_signal_fence
#define atomic_signal_fence(order) ((void)(order))

/* The x86 pause hint (abar__pause) is no instruction GenMC knows. */
#define __builtin_ia32_pause() ((void)0)

#define sched_yield() 0
#define getpid() 1
#define clock_gettime(clk, ts) ((void)(clk), (ts)->tv_sec = 0, (ts)->tv_nsec = 0, 0)
#define getenv(name) ((void)(name), (char *)NULL)
static inline unsigned long long abar_genmc_strtoull(const char *s, char **end)
{
    if (end) *end = (char *)s;
    return 0;
}
#define strtoull(s, end, base) ((void)(base), abar_genmc_strtoull(s, end))
#define strtoul(s, end, base) ((unsigned long)abar_genmc_strtoull(s, end))
#define syscall(...) (-1L)
/* abar_init and abar_ring_init clear their object with memset, which GenMC
 * turns into stores of the object's declared type (64-bit words of abar_t)
 * that the core's 32-bit fields then read: a mixed-size access, which GenMC
 * refuses.  The clients init each object once, in static memory, zero
 * already: the memset is left out. */
#define memset(p, c, n) ((void)(c), (void)(n), (void *)(p))

#ifndef pthread_once_t
#define pthread_once_t int
#endif
#ifndef pthread_key_t
#define pthread_key_t int
#endif
#define pthread_once(once, fn) ((void)(once), (void)(fn), 0)
#define pthread_key_create(key, dtor) ((void)(key), (void)(dtor), 0)
#define pthread_setspecific(key, v) ((void)(key), (void)(v), 0)
#define pthread_atfork(a, b, c) ((void)(a), (void)(b), (void)(c), 0)

#endif
