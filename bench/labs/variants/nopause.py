#!/usr/bin/env python3
"""Variant 'nopause' (measurement only): the waiters' spin loop polls without
a pause instruction (about 140 cycles on recent Intel cores), to price the
pause in the time a waiter takes to see its release.  Usage: nopause.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sub import sub  # noqa: E402

sub(sys.argv[1] + "/wait.c", "        else abar__pause();\n",
    "        else atomic_signal_fence(memory_order_seq_cst);\n")
