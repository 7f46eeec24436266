/* futex.c - parking: the Linux futex calls, the spin budget, the clock. */
#define _GNU_SOURCE
#include "abar_internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How long a waiter spins before it parks, unless ABAR_SPIN_NS says otherwise.
 * Long enough to cover a phase when every thread has its own core (a few µs),
 * short enough that a thread blocked for 10 ms burns well under 1 ms. */
#define ABAR_DEFAULT_SPIN_NS 50000u

static _Atomic uint64_t spin_ns_cache = UINT64_MAX;
static _Atomic unsigned ncpu_cache;

uint64_t abar__spin_ns(void)
{
    /* relaxed: a racy first computation yields the same value in every thread */
    uint64_t v = atomic_load_explicit(&spin_ns_cache, memory_order_relaxed);
    if (v != UINT64_MAX) return v;
    v = ABAR_DEFAULT_SPIN_NS;
    const char *e = getenv("ABAR_SPIN_NS");
    if (e && *e) {
        char *end;
        unsigned long long x = strtoull(e, &end, 10);
        if (*end == '\0' && x < UINT64_MAX) v = x;
    }
    atomic_store_explicit(&spin_ns_cache, v, memory_order_relaxed);
    return v;
}

unsigned abar__ncpu(void)
{
    unsigned v = atomic_load_explicit(&ncpu_cache, memory_order_relaxed);
    if (v) return v;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    v = n > 0 ? (unsigned)n : 1;
    atomic_store_explicit(&ncpu_cache, v, memory_order_relaxed);
    return v;
}

uint64_t abar__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wakes every thread sleeping on word.  Touches only the address, never the
 * memory: the barrier may already be destroyed and freed by a released
 * waiter, and FUTEX_WAKE on such an address is harmless (at worst a spurious
 * wake-up, which every futex user tolerates). */
void abar__futex_wake_all(_Atomic uint32_t *word, bool pshared)
{
    int op = FUTEX_WAKE | (pshared ? 0 : FUTEX_PRIVATE_FLAG);
    int saved = errno;
    syscall(SYS_futex, (void *)word, op, INT32_MAX, NULL, NULL, 0);
    errno = saved;
}

/* Sleeps while *word == val, until woken or the CLOCK_MONOTONIC deadline.
 * Returns 0 (woken, value changed, or signal: the caller re-checks) or ETIMEDOUT. */
int abar__futex_wait(_Atomic uint32_t *word, uint32_t val, bool pshared,
                     const struct timespec *abstime)
{
    int op = FUTEX_WAIT_BITSET | (pshared ? 0 : FUTEX_PRIVATE_FLAG);
    int saved = errno; /* the caller's errno is not ours to change */
    long r = syscall(SYS_futex, (void *)word, op, val, abstime, NULL,
                     FUTEX_BITSET_MATCH_ANY);
    int err = r == -1 ? errno : 0;
    errno = saved;
    return err == ETIMEDOUT ? ETIMEDOUT : 0; /* woken, EAGAIN or EINTR: caller re-checks */
}
