#!/usr/bin/env python3
"""Variant 'sep' (measurement only): `phase` and `futex` move from line 0
(the arrival line, RMW'd by every arrival) to line 1, and the wait loop
polls `phase` there for 63 of every 64 rounds: spinners are no longer
invalidated by every arrival, only by the completer's release.
Usage: sep.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from noinside import sub  # noqa: E402

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
LOOP = "    for (unsigned i = 1; budget || (b->flags & ABAR_WAIT_SPIN); i++) {\n"

def apply(src):
    sub(src + "/abar_internal.h", LAYOUT_OLD, LAYOUT_NEW)
    sub(src + "/wait.c", LOOP, LOOP +
        "        if (i % 64 != 0 && atomic_load_explicit(&b->phase, memory_order_relaxed) == t.raw) {\n"
        "            if (oversubscribed) sched_yield();\n"
        "            else abar__pause();\n"
        "            continue;\n"
        "        }\n")

if __name__ == "__main__":
    apply(sys.argv[1])
