#!/usr/bin/env python3
"""Variant 'xadd' (measurement only, NOT SPEC-safe: an arrival on a cancelled
or over-full barrier is undone after the fact instead of refused): 'lean'
plus a single fetch_sub for a plain arrival instead of the CAS loop, to
price CAS retries under contention.  Usage: xadd.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lean  # noqa: E402
import noinside  # noqa: E402

def apply(src):
    lean.apply(src)
    apply_arrive(src)

def apply_arrive(src):
    noinside.sub(src + "/arrive.c",
        "    uint64_t p = abar__snapshot(bi, &s);\n    for (;;) {",
        "    uint64_t p = abar__snapshot(bi, &s);\n"
        "    if (n == 1 && !drop) {\n"
        "        uint64_t old = atomic_fetch_sub_explicit(&bi->state, 1, memory_order_acq_rel);\n"
        "        if (st_pending(old) >= 1 && !(old & (ST_CANCELLED | ST_FINISHED))) {\n"
        "            if (st_phase(old) != phase_lo(p)) p = abar__snapshot(bi, &s);\n"
        "            ns = old - 1;\n"
        "            if (st_pending(ns) == 0) abar__complete(bi, p, ns);\n"
        "            return tok_make(p, ident);\n"
        "        }\n"
        "        atomic_fetch_add_explicit(&bi->state, 1, memory_order_relaxed);\n"
        "        s = atomic_load_explicit(&bi->state, memory_order_acquire);\n"
        "    }\n"
        "    for (;;) {")

if __name__ == "__main__":
    apply(sys.argv[1])
