#!/usr/bin/env python3
"""Variant 'blindjudge' (measurement only): the core with its stretches
judged only from waits that outlive the first spin, only at their end and
against the spinning stretch alone, as before 5c5edd9: no sample among the
waits the first spin released, no early verdict, no measurement of the
spinning since a series' first sign (a8a6c9f).  Where spinning works nearly every wait ends in the first
spin, so spinning may have no rate, and a stretch started by the machine's
own noise runs its whole length.  The before of a before/after in one run.
Usage: blindjudge.py CORE_SRC_DIR (the copy's src/core)"""
import sys

path = sys.argv[1] + "/policy.c"
s = open(path).read()
for old, new in [
    ("""    if (((const struct abar_impl *)b)->flags & ABAR_WAIT_SPIN) return;""",
     """    return;"""),
    ("""        if (mine.soon) judge_early(now);""",
     """        if (mine.soon && 0) judge_early(now);"""),
    # a8a6c9f's measurement of the spinning since a series' first sign
    ("""        if (n == 1 && atomic_load_explicit(&abar__calm_until, memory_order_relaxed) == 0) {""",
     """        if (0) {"""),
    ("""        if (ref == 0 || since < ref) ref = since;""",
     """        if (0) ref = since;"""),
]:
    if s.count(old) != 1:
        sys.exit("blindjudge.py: a line to change not found in " + path + ": " + old.strip())
    s = s.replace(old, new)
open(path, "w").write(s)
