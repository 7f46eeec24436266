#!/usr/bin/env python3
"""Variant 'sep' (measurement only): 'lean', with `phase` and `futex` moved
from line 0 (the arrival line, RMW'd by every arrival) to line 1, and the
pre-park spin of abar_arrive_and_wait polling `phase` there: spinners are no
longer invalidated by every arrival, only by the completer's release.
Usage: sep.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import noinside  # noqa: E402

LAYOUT_OLD = """    _Atomic uint64_t state;   /* see above */
    _Atomic uint64_t phase;   /* full phase; S or S+1 (completer publishes it first) */
    _Atomic uint32_t futex;   /* low 32 bits of `phase`: the word parked waiters sleep on */
    _Atomic uint32_t inside;  /* threads blocked in a wait: destroy is EBUSY while > 0 */
    char pad0[64 - 24];
"""
LAYOUT_NEW = """    _Atomic uint64_t state;   /* see above */
    _Atomic uint32_t inside;  /* threads blocked in a wait: destroy is EBUSY while > 0 */
    char pad0[64 - 12];
    _Atomic uint64_t phase;   /* line 1: written once a phase, by the completer */
    _Atomic uint32_t futex;
"""

def apply(src):
    noinside.apply(src)
    noinside.sub(src + "/abar_internal.h", LAYOUT_OLD, LAYOUT_NEW)
    noinside.sub(src + "/wait.c",
        "    if (r == 0) {\n        uint64_t s, cur = abar__snapshot(bi, &s);",
        "    if (r == 0) {\n        uint64_t s;\n"
        "        if (!(bi->flags & ABAR_WAIT_PARK))\n"
        "            for (unsigned i = 0; i < 256; i++) {\n"
        "                if (atomic_load_explicit(&bi->phase, memory_order_acquire) != t.raw) break;\n"
        "                abar__pause();\n"
        "            }\n"
        "        uint64_t cur = abar__snapshot(bi, &s);")

if __name__ == "__main__":
    apply(sys.argv[1])
