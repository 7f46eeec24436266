#!/usr/bin/env python3
"""Variant 'relpf' (measurement only): a completer asks for the release line
in the state a write needs (PREFETCHW) as soon as the phase is its own (after
the completion function, if any), so that the line's transfer overlaps its
reset of the state word instead of following it.  Usage: relpf.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sub import sub  # noqa: E402

sub(sys.argv[1] + "/arrive.c", "    struct abar__release *r = rel(b);\n    /* relaxed: `expected`",
    "    struct abar__release *r = rel(b);\n    abar__prefetch_write(&r->phase);\n    /* relaxed: `expected`")
