#!/usr/bin/env python3
"""Variant 'parknow' (measurement only): inside a park-soon stretch
(policy.c) every waiter parks after its first, lean spin, with no budget
at all, where the core spins as long as a wake-up takes (futex.c
abar__spin_lean).  Everything else is the core as it is.  Usage:
parknow.py CORE_SRC_DIR (the copy's src/core)"""
import sys

path = sys.argv[1] + "/wait.c"
s = open(path).read()
old = ": soon ? abar__spin_lean(b)"
if s.count(old) != 1:
    sys.exit("parknow.py: the stretch's budget not found in " + path)
open(path, "w").write(s.replace(old, ": soon ? 0"))
