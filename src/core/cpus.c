/* cpus.c - the CPUs a cgroup's CPU quota buys this process (cgroup v2),
 * and whether they have PREFETCHW (abar__prefetch_write).
 *
 * A container started with `docker --cpus=2` (or a Kubernetes CPU limit) on
 * a 64-CPU host may run on all 64 CPUs (its affinity mask says 64) but only
 * for 2 CPUs' worth of time per period: the kernel throttles it beyond that.
 * Waiters that spin as if every thread had a CPU then burn the quota that
 * the threads they wait for need.  abar__ncpu (futex.c; the Linux backend's
 * abar__os_ncpu) takes the smaller of the affinity mask and what this file
 * finds.  Elsewhere nothing calls it but the tests (no such files: 0). */
#include "abar_internal.h"
#include "os.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* Set before any thread can be in abar (a constructor): CPUID
 * 0x80000001 ECX bit 8 (PRFCHW), which Intel cores have since Broadwell
 * and AMD's since the K6; read plainly by every thread. */
bool abar__prefetchw_ok;

__attribute__((constructor)) static void prefetchw_probe(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    abar__prefetchw_ok = __get_cpuid(0x80000001u, &a, &b, &c, &d) && ((c >> 8) & 1u);
#endif
}

/* One cpu.max file: "max PERIOD" (no quota) or "QUOTA PERIOD" (µs of CPU
 * time per period).  The CPUs the quota buys, rounded up; 0 for no quota,
 * an unreadable file or one this does not understand. */
static unsigned quota_cpus(const char *path)
{
    FILE *f = fopen(path, ABAR__FOPEN_READ);
    if (f == NULL) return 0;
    char quota[32];
    unsigned long long period = 0;
    const int got = fscanf(f, "%31s %llu", quota, &period);
    fclose(f);
    if (got != 2 || period == 0 || strcmp(quota, "max") == 0) return 0;
    char *end;
    const unsigned long long q = strtoull(quota, &end, 10);
    if (*end != '\0' || q == 0) return 0;
    const unsigned long long n = (q + period - 1) / period;
    return n < ABAR_EXPECTED_MAX ? (unsigned)n : ABAR_EXPECTED_MAX;
}

/* The smallest quota on the way from this process's cgroup up to the root
 * of the cgroup v2 tree (a parent's quota binds its children too), in CPUs;
 * 0 when there is none, or no cgroup v2 to read (v1 is not read).  `root`
 * prefixes every path: "" here, a fake tree in the tests. */
#define CG_PATH 4096 /* Linux's PATH_MAX */

unsigned abar__cgroup_cpus(const char *root)
{
    char path[CG_PATH + 64], line[CG_PATH];
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, ABAR__FOPEN_READ);
    if (f == NULL) return 0;
    bool v2 = false;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "0::/", 4) == 0) { /* "0::/the/path": the v2 hierarchy */
            v2 = true;
            break;
        }
    fclose(f);
    if (!v2) return 0;
    line[strcspn(line, "\n")] = '\0';
    char dir[CG_PATH];
    const int n = snprintf(dir, sizeof dir, "%s/sys/fs/cgroup%s", root, line + 3);
    if (n < 0 || (size_t)n >= sizeof dir) return 0;
    char *const top = dir + strlen(root) + strlen("/sys/fs/cgroup");
    unsigned least = 0;
    for (;;) {
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        const unsigned c = quota_cpus(path);
        if (c && (least == 0 || c < least)) least = c;
        char *slash = strrchr(top, '/');
        if (slash == NULL) break;
        *slash = '\0'; /* the parent; at last the tree's root itself */
    }
    return least;
}
