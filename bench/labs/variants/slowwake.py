#!/usr/bin/env python3
"""Variant 'slowwake' (measurement only): a host whose halted vCPUs come back
late.  A waiter woken from FUTEX_WAIT first spins for a random time in
ABAR_SLOWWAKE_US="MIN,MAX" (µs, default 20,500), as a parked thread's vCPU,
halted while it slept, waits for its host to run it again.  Everything else
is the core as it is.  Usage: slowwake.py CORE_SRC_DIR (the copy's src/core)"""
import sys

path = sys.argv[1] + "/os_futex.c"  # the Linux backend's FUTEX_WAIT
s = open(path).read()
old = """    int err = r == -1 ? errno : 0;
    errno = saved;"""
new = """    int err = r == -1 ? errno : 0;
    if (r == 0) { /* woken after a sleep: the vCPU comes back late */
        static _Atomic uint64_t lo = UINT64_MAX, hi;
        static _Atomic unsigned seed = 1;
        if (atomic_load(&lo) == UINT64_MAX) {
            unsigned long long a = 20, b = 500;
            const char *e = getenv("ABAR_SLOWWAKE_US");
            if (e) sscanf(e, "%llu,%llu", &a, &b);
            atomic_store(&hi, b * 1000u);
            atomic_store(&lo, a * 1000u);
        }
        unsigned x = atomic_fetch_add(&seed, 2654435761u) * 2246822519u;
        x ^= x >> 15;
        const uint64_t span = atomic_load(&hi) - atomic_load(&lo) + 1;
        const uint64_t t0 = abar__now_ns(), d = atomic_load(&lo) + (uint64_t)x % span;
        while (abar__now_ns() - t0 < d)
            ;
    }
    errno = saved;"""
assert old in s, "os_futex.c changed: update slowwake.py"
s = s.replace(old, new, 1)
if "#include <stdio.h>" not in s:
    s = s.replace("#include <errno.h>", "#include <errno.h>\n#include <stdio.h>\n#include <stdlib.h>", 1)
open(path, "w").write(s)
print("slowwake: os_futex.c patched")
