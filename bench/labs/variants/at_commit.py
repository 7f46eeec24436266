#!/usr/bin/env python3
"""Variant 'at_commit' (measurement only): the core's sources as they were
at a commit (ABAR_VARIANT_COMMIT, default HEAD~1), for a before/after row in
the same run.  Usage: at_commit.py CORE_SRC_DIR (the copy's src/core)"""
import os
import subprocess
import sys

src = sys.argv[1]
commit = os.environ.get("ABAR_VARIANT_COMMIT", "HEAD~1")
root = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
# the core's sources, wherever they were at that commit (src/ or src/core/)
names = [n for n in subprocess.check_output(["git", "-C", root, "ls-tree", "-r", "--name-only", commit, "src/"],
                                            text=True).split()
         if n.count("/") == 1 or n.startswith("src/core/")]
for path in names:
    if not path.endswith((".c", ".h")) or not os.path.exists(os.path.join(src, os.path.basename(path))):
        continue  # only the core's files (a commit before the move also had the team's and ring's)
    data = subprocess.check_output(["git", "-C", root, "show", f"{commit}:{path}"])
    with open(os.path.join(src, os.path.basename(path)), "wb") as f:
        f.write(data)
print(f"at_commit: src/ as at {commit} ({len(names)} files)")
