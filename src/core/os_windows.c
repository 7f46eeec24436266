/* os_windows.c - the Windows backend (os.h): WaitOnAddress and
 * WakeByAddressAll (Windows 8 on, synchronization library), and
 * FlushProcessWriteBuffers in the role Linux's membarrier plays (hazard.c).
 * Both reach one process only: process-shared words are polled (os.h
 * abar__os_poll_wait). */
#include "abar_internal.h"
#include "os.h"

#if defined(ABAR_WAIT_WINDOWS)

#include <errno.h>
#include <windows.h>

void abar__futex_wake_all(_Atomic uint32_t *word, bool pshared)
{
    if (pshared) return; /* pollers see the change */
    /* Touches only the address: WakeByAddressAll on one no thread waits on
     * does nothing. */
    WakeByAddressAll((void *)word);
}

int abar__futex_wait(_Atomic uint32_t *word, uint32_t val, bool pshared,
                     const struct timespec *abstime)
{
    if (pshared) return abar__os_poll_wait(word, val, abstime);
    DWORD ms = INFINITE;
    const uint64_t deadline = abar__os_deadline_ns(abstime);
    if (deadline != UINT64_MAX) {
        const uint64_t now = abar__now_ns();
        if (now >= deadline) return ETIMEDOUT;
        const uint64_t left = (deadline - now + 999999u) / 1000000u; /* rounded up */
        ms = left < INFINITE - 1 ? (DWORD)left : INFINITE - 1;
    }
    int saved = errno;
    const BOOL woken = WaitOnAddress((volatile void *)word, &val, sizeof val, ms);
    const DWORD err = woken ? 0 : GetLastError();
    errno = saved;
    /* A timeout counts only once the deadline has passed by our clock:
     * otherwise the caller re-checks and waits again. */
    if (err == ERROR_TIMEOUT && abar__now_ns() >= deadline) return ETIMEDOUT;
    return 0;
}

/* Wine's FlushProcessWriteBuffers did nothing before Wine 9 (a stub): under
 * Wine (ntdll exports wine_get_version) both sides fence instead. */
bool abar__os_membarrier_register(void)
{
    const HMODULE ntdll = GetModuleHandleA("ntdll.dll");
    return ntdll == NULL || GetProcAddress(ntdll, "wine_get_version") == NULL;
}
void abar__os_membarrier(void) { FlushProcessWriteBuffers(); }

/* The CPUs of the process's affinity mask (at most 64: one processor group). */
unsigned abar__os_ncpu(void)
{
    DWORD_PTR proc = 0, sys = 0;
    unsigned n = 0;
    if (GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys))
        for (; proc; proc &= proc - 1) n++;
    if (n == 0) {
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        n = si.dwNumberOfProcessors;
    }
    return n ? n : 1;
}

int abar__os_cpus(int *cpus, int max)
{
    DWORD_PTR proc = 0, sys = 0;
    if (!GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys) || proc == 0) proc = 1;
    int n = 0;
    for (int c = 0; c < (int)(8 * sizeof proc); c++)
        if (proc >> c & 1) {
            if (cpus && n < max) cpus[n] = c;
            n++;
        }
    return cpus && n > max ? max : n;
}

/* winpthreads' attributes carry no CPU: a pool thread runs where Windows
 * puts it. */
bool abar__os_pin(void *pthread_attr, int cpu)
{
    (void)pthread_attr, (void)cpu;
    return false;
}

void abar__os_nap(uint64_t ns)
{
    if (ns < 1000000u) SwitchToThread();
    else Sleep((DWORD)(ns / 1000000u));
}

#endif
