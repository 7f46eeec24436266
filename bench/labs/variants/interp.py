#!/usr/bin/env python3
"""Variant 'interp' (measurement only): the default policy of the
pthread interposer's compact barrier (src/pthread/interposer.c) in the
core: a waiter spins ABAR_SPIN_NS >> down, process-wide down in 0..6; a
wait released while spinning takes one from down, a wait that spent its
budget and parks adds one.  No park-soon stretch, no waking extension, no
wake-up floor or doubling.  Usage: interp.py CORE_SRC_DIR"""
import sys

path = sys.argv[1] + "/wait.c"
s = open(path).read()
reps = [
    ("/* Spins for phase t.raw, bounded in time",
     "static _Atomic unsigned interp_down;\n"
     "static void interp_step(int up)\n"
     "{\n"
     "    unsigned d = atomic_load_explicit(&interp_down, memory_order_relaxed);\n"
     "    if (up && d < 6) atomic_store_explicit(&interp_down, d + 1, memory_order_relaxed);\n"
     "    if (!up && d > 0) atomic_store_explicit(&interp_down, d - 1, memory_order_relaxed);\n"
     "}\n\n"
     "/* Spins for phase t.raw, bounded in time"),
    ("""                      : soon ? abar__spin_lean(b)
                             : abar__spin_budget(b, atomic_load_explicit(&b->slept, memory_order_relaxed)
                                                        ? ABAR__SLEPT_SPIN_FACTOR : 1);""",
     """                      : abar__spin_ns() >> atomic_load_explicit(&interp_down, memory_order_relaxed);
    (void)soon;"""),
    ("        if (released(rw, t)) return 0;",
     "        if (released(rw, t)) { if (adapts) interp_step(0); return 0; }"),
    ("if (!soon && now - t0 < ABAR__WAKING_SPIN_NS &&", "if (0 && now - t0 < ABAR__WAKING_SPIN_NS &&"),
    ("                if (!(b->flags & ABAR_WAIT_SPIN)) return PARK;",
     "                if (!(b->flags & ABAR_WAIT_SPIN)) { if (adapts) interp_step(1); return PARK; }"),
]
for old, new in reps:
    if s.count(old) != 1:
        sys.exit("interp.py: not found once in " + path + ": " + old)
    s = s.replace(old, new)
open(path, "w").write(s)
