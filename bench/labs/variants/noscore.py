#!/usr/bin/env python3
"""Variant 'noscore' (measurement only): inside a park-soon stretch every
wait spins its lean budget (a wake-up, at most the base), whatever share of
those spins were lost: the core without the barrier's score of lost spins
(futex.c abar__spin_lean), which makes waiters park at once while more are
lost than paid.  Everything else is the core as it is.  Usage: noscore.py
CORE_SRC_DIR (the copy's src/core)"""
import sys

path = sys.argv[1] + "/futex.c"
s = open(path).read()
old = "    if (atomic_load_explicit(&b->lean_miss, memory_order_relaxed) >= ABAR__LEAN_MISS_PARK)\n"
if s.count(old) != 1:
    sys.exit("noscore.py: the score's test not found in " + path)
open(path, "w").write(s.replace(old, "    (void)probe;\n    if (0)\n"))
