#!/usr/bin/env python3
"""check.py - every variant script here still applies to the core as it is:
each patches its own copy of src/core, and the patched files must compile
(cc -fsyntax-only, warnings as errors).  A variant that no longer applies
fails here, not on a device run.  The at_commit scripts take the core of
another commit and are not checked.

    check.py SOURCE_ROOT [CC]"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

root = sys.argv[1]
cc = sys.argv[2] if len(sys.argv) > 2 else "cc"
here = os.path.dirname(os.path.abspath(__file__))
skip = {"sub.py", "check.py"}
scripts = sorted(p for p in glob.glob(os.path.join(here, "*.py"))
                 if os.path.basename(p) not in skip and not os.path.basename(p).startswith("at_commit"))
core = os.path.join(root, "src", "core")


def problem_of(script, copy):
    """What is wrong with the variant's patch of copy, or None."""
    before = {f: open(os.path.join(copy, f), "rb").read() for f in os.listdir(copy)}
    r = subprocess.run([sys.executable, script, copy], capture_output=True, text=True)
    if r.returncode != 0:
        return ((r.stderr or r.stdout).strip().splitlines() or ["exit status %d" % r.returncode])[-1], []
    changed = sorted(f for f in before if open(os.path.join(copy, f), "rb").read() != before[f])
    if not changed:
        return "it changed nothing", []
    # the changed .c files, and every .c that includes a changed header
    units = {f for f in changed if f.endswith(".c")}
    for h in (f for f in changed if f.endswith(".h")):
        units |= {u for u in before if u.endswith(".c") and f'#include "{h}"' in open(os.path.join(copy, u)).read()}
    for u in sorted(units):
        c = subprocess.run([cc, "-std=c11", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-DABAR_WAIT_FUTEX=1",
                            "-I", os.path.join(root, "include"), "-I", copy, os.path.join(copy, u)],
                           capture_output=True, text=True)
        if c.returncode != 0:
            return f"{u} does not compile: " + (c.stderr.strip().splitlines() or ["?"])[0], changed
    return None, changed


failed = 0
for script in scripts:
    name = os.path.basename(script)[:-3]
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "core")
        shutil.copytree(core, copy)
        problem, changed = problem_of(script, copy)
    if problem:
        failed += 1
        print(f"FAIL {name}: {problem}")
    else:
        print(f"ok   {name}: patches {', '.join(changed)}")
print(f"variants: {len(scripts) - failed} apply, {failed} do not")
sys.exit(1 if failed or not scripts else 0)
