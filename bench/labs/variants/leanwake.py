#!/usr/bin/env python3
"""Variant 'leanwake' (measurement only): inside a park-soon stretch a
waiter keeps spinning, as outside one, while the last phase's sleepers are
still coming back (wait.c's waking extension, up to 20 ms).  Everything
else is the core as it is.  Usage: leanwake.py CORE_SRC_DIR"""
import sys

path = sys.argv[1] + "/wait.c"
s = open(path).read()
old = "if (!soon && now - t0 < ABAR__WAKING_SPIN_NS &&"
if s.count(old) != 1:
    sys.exit("leanwake.py: the waking extension not found in " + path)
open(path, "w").write(s.replace(old, "if (now - t0 < ABAR__WAKING_SPIN_NS &&"))
