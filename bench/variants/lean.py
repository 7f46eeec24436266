#!/usr/bin/env python3
"""Variant 'lean' (measurement only): 'noinside' plus a pure spin of up to 256
polls of the state word (no clock read, no snapshot) right after the arrival
in abar_arrive_and_wait, before the usual judge/block path.  Usage: lean.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import noinside  # noqa: E402

def apply(src):
    noinside.apply(src)
    noinside.sub(src + "/wait.c",
        "    if (r == 0) {\n        uint64_t s, cur = abar__snapshot(bi, &s);",
        "    if (r == 0) {\n        uint64_t s;\n"
        "        if (!(bi->flags & ABAR_WAIT_PARK))\n"
        "            for (unsigned i = 0; i < 256; i++) {\n"
        "                s = atomic_load_explicit(&bi->state, memory_order_acquire);\n"
        "                if (st_phase(s) != phase_lo(t.raw) || (s & (ST_CANCELLED | ST_FINISHED))) break;\n"
        "                abar__pause();\n"
        "            }\n"
        "        uint64_t cur = abar__snapshot(bi, &s);")

if __name__ == "__main__":
    apply(sys.argv[1])
