#!/usr/bin/env python3
"""Variant 'postload' (measurement only, NOT safe: it drops the refusal
argument of abar__ticket_slow, which needs `phase` read before the add): the
pair's add reads `phase` after its RMW instead of before, so that the add is
the first access to the line on the way back from a release (one transfer,
owned, where a read and then an upgrade may take two).  Prices the protocol
change before its model is written.  Usage: postload.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sub import sub  # noqa: E402

sub(sys.argv[1] + "/abar_internal.h",
    """    const uint64_t p = atomic_load_explicit(&b->pair.phase, memory_order_acquire);
    /* acq_rel: release publishes this thread's writes to the arrival that
     * completes the phase; acquire gives that arrival the other's writes
     * (all arrivals form one release sequence on `state`). */
    const uint64_t v = atomic_fetch_add_explicit(&b->state, ST_HALF, memory_order_acq_rel);
""",
    """    const uint64_t v = atomic_fetch_add_explicit(&b->state, ST_HALF, memory_order_acq_rel);
    uint64_t p = atomic_load_explicit(&b->pair.phase, memory_order_acquire);
    if (phase_lo(p) != st_phase(v)) p--; /* the other carried and published already */
""")
