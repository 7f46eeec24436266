#!/usr/bin/env python3
"""Variant 'pfentry' (measurement only): the pair's path (wait.c
pair_arrive_and_wait) asks for the state line for writing (PREFETCHW) before
abar__ticket_add reads `phase` on it, so that a released thread whose line
the carrier's next add has taken back gets it once, owned, instead of a read
and then an upgrade.  Usage: pfentry.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sub import sub  # noqa: E402

sub(sys.argv[1] + "/wait.c", "    uint64_t before, s;\n    const int k = abar__ticket_add(bi, &before, &s);\n",
    "    uint64_t before, s;\n    abar__prefetch_write(&bi->state);\n    const int k = abar__ticket_add(bi, &before, &s);\n")
