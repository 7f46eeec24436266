/* os_futex.c - the Linux backend (os.h): the futex and membarrier (the
 * CPUs: os_linux.c). */
#define _GNU_SOURCE
#include "abar_internal.h"
#include "os.h"

#if defined(ABAR_WAIT_FUTEX)

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* membarrier (4.14+); refused on an old kernel, under seccomp or an emulator. */
bool abar__os_membarrier_register(void)
{
    int saved = errno;
    bool ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    errno = saved;
    return ok;
}

void abar__os_membarrier(void)
{
    int saved = errno;
    /* Cannot fail: the process is registered (EPERM is the only error). */
    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    errno = saved;
}

#endif
