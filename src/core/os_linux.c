/* os_linux.c - the CPUs on Linux, whichever wait/wake backend is built
 * (os.h): the affinity mask and a cgroup's CPU quota. */
#define _GNU_SOURCE
#include "abar_internal.h"
#include "os.h"

#if defined(__linux__)

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

/* The online CPUs, at most the main thread's affinity mask (where taskset,
 * a cpuset or a container's CPU set shows; the main thread's id is the
 * process id), at most what a cgroup CPU quota buys (cpus.c). */
unsigned abar__os_ncpu(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned v = n > 0 ? (unsigned)n : 1;
    cpu_set_t set;
    if (sched_getaffinity(getpid(), sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c > 0 && (unsigned)c < v) v = (unsigned)c;
    }
    const unsigned q = abar__cgroup_cpus("");
    if (q && q < v) v = q;
    return v;
}

int abar__os_cpus(int *cpus, int max)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_SET(0, &set);
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            if (cpus && n < max) cpus[n] = c;
            n++;
        }
    return cpus && n > max ? max : n;
}

bool abar__os_pin(void *pthread_attr, int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_attr_setaffinity_np(pthread_attr, sizeof one, &one) == 0;
}

#endif
