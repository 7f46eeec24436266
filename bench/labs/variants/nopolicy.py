#!/usr/bin/env python3
"""Variant 'nopolicy' (measurement only): the core without its park-soon
stretches (policy.c): abar__park_soon() always says no, so every waiter
spends its spin budget as the core did before the host-wide policy; the
signs are still counted, nothing acts on them.  Everything else is the core
as it is: the before of a before/after in one run.  Usage: nopolicy.py
CORE_SRC_DIR (the copy's src/core)"""
import sys

path = sys.argv[1] + "/policy.h"
s = open(path).read()
old = """    return atomic_load_explicit(&abar__calm_until, memory_order_relaxed) != 0 && abar__park_soon_slow();"""
new = """    return false;"""
if s.count(old) != 1:
    sys.exit("nopolicy.py: abar__park_soon's body not found in " + path)
open(path, "w").write(s.replace(old, new))
