/*
 * os.h - what the core asks of the operating system, and which backend
 * answers it.  One backend is compiled in, chosen when the build is
 * configured (CMake's ABAR_WAIT, which defines one of the macros below);
 * without one, the platform's own:
 *
 *   ABAR_WAIT_FUTEX     os_futex.c: Linux.  The futex and membarrier.
 *   ABAR_WAIT_WINDOWS   os_windows.c: WaitOnAddress / WakeByAddressAll,
 *                       FlushProcessWriteBuffers in membarrier's role,
 *                       the process's affinity mask.
 *   ABAR_WAIT_PORTABLE  os_portable.c: any POSIX system.  A table of
 *                       mutex + condition variable pairs hashed by the
 *                       word's address; seq_cst fences on both sides of
 *                       the hazard fence; the online CPUs.
 *
 * On Linux the CPUs (abar__os_ncpu, abar__os_cpus, abar__os_pin) are
 * os_linux.c's whichever backend waits: the affinity mask and a cgroup's
 * CPU quota.  On Windows every library file is also compiled with the
 * prelude os_win.h (allocation, pthread_atfork).
 *
 * The wait/wake pair (abar__futex_wait, abar__futex_wake_all: declared in
 * abar_internal.h, called by wait.c, arrive.c, lifecycle.c and the team
 * pool) keeps the futex's contract on every backend: a wait sleeps only
 * while the word holds the value given (checked atomically with going to
 * sleep), returns 0 on any wake (the caller re-checks) and ETIMEDOUT only
 * once the CLOCK_MONOTONIC deadline has passed; a wake touches only the
 * address, never the memory, which may already be freed.
 *
 * A process-shared barrier's word lives in memory that several processes
 * map.  WaitOnAddress and the portable table work within one process only,
 * so there a process-shared wait polls the word instead
 * (abar__os_poll_wait, below): a nap that grows from 1 µs to 1 ms, so a
 * parked waiter of another process sees its release at most about 1 ms
 * late, and a wake has nothing to do.  The spinning before a park
 * (wait.c) is the same on every backend.
 */
#ifndef ABAR_OS_H
#define ABAR_OS_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#if !defined(ABAR_WAIT_FUTEX) && !defined(ABAR_WAIT_WINDOWS) && !defined(ABAR_WAIT_PORTABLE)
#  if defined(__linux__)
#    define ABAR_WAIT_FUTEX 1
#  elif defined(_WIN32)
#    define ABAR_WAIT_WINDOWS 1
#  else
#    define ABAR_WAIT_PORTABLE 1
#  endif
#endif
#if defined(ABAR_WAIT_FUTEX) + defined(ABAR_WAIT_WINDOWS) + defined(ABAR_WAIT_PORTABLE) != 1
#  error "exactly one of ABAR_WAIT_FUTEX, ABAR_WAIT_WINDOWS, ABAR_WAIT_PORTABLE"
#endif
#if defined(ABAR_WAIT_FUTEX) && !defined(__linux__)
#  error "ABAR_WAIT=futex is Linux's"
#endif
#if defined(ABAR_WAIT_WINDOWS) && !defined(_WIN32)
#  error "ABAR_WAIT=windows is Windows'"
#endif

/* The hazard fence's heavy half (hazard.c).  abar__os_membarrier_register
 * says whether abar__os_membarrier makes every running thread of the
 * process execute a full fence (then waiters need only the compiler's
 * order); it is called at load and again in a fork child. */
bool abar__os_membarrier_register(void);
void abar__os_membarrier(void);

/* The CPUs this process may use: the online CPUs, at most its affinity
 * mask (read once at load, futex.c abar__ncpu), and at most a CPU quota
 * where the system has one; at least 1. */
unsigned abar__os_ncpu(void);

/* The CPUs this thread may run on, by number, at most max of them (the
 * team pool's placement), and how many: at least CPU 0.  With cpus NULL,
 * only how many.  abar__os_pin asks for a new
 * thread's attributes to pin it to one; false where that cannot be. */
int abar__os_cpus(int *cpus, int max);
bool abar__os_pin(void *pthread_attr, int cpu);

/* Sleeps about ns nanoseconds (a process-shared poll's nap; the backends
 * that poll define it). */
void abar__os_nap(uint64_t ns);

uint64_t abar__now_ns(void);

/* A CLOCK_MONOTONIC deadline in ns; one past 2^64 ns is never reached. */
static inline uint64_t abar__os_deadline_ns(const struct timespec *ts)
{
    if (ts == NULL) return UINT64_MAX;
    if (ts->tv_sec < 0) return 0;
    if ((uint64_t)ts->tv_sec > (UINT64_MAX - 999999999u) / 1000000000u) return UINT64_MAX;
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* A process-shared wait where the wait/wake calls reach only this process:
 * polls *word with growing naps until it is no longer val, or the deadline
 * (CLOCK_MONOTONIC) has passed. */
#define ABAR__POLL_NAP_MIN_NS 1000u
#define ABAR__POLL_NAP_MAX_NS 1000000u
static inline int abar__os_poll_wait(_Atomic uint32_t *word, uint32_t val, const struct timespec *abstime)
{
    const uint64_t deadline = abar__os_deadline_ns(abstime);
    for (uint64_t nap = ABAR__POLL_NAP_MIN_NS;; nap = nap < ABAR__POLL_NAP_MAX_NS ? 2 * nap : nap) {
        /* relaxed: the caller's acquire re-check follows */
        if (atomic_load_explicit(word, memory_order_relaxed) != val) return 0;
        const uint64_t now = abar__now_ns();
        if (now >= deadline) return ETIMEDOUT;
        abar__os_nap(deadline - now < nap ? deadline - now : nap);
    }
}

/* fopen's mode for reading a file the process should not hand to a child
 * it executes (close-on-exec where the C library knows "e"). */
#if defined(_WIN32)
#  define ABAR__FOPEN_READ "r"
#else
#  define ABAR__FOPEN_READ "re"
#endif

#endif
