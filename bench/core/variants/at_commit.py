#!/usr/bin/env python3
"""Variant 'at_commit' (measurement only): the core's sources as they were
at a commit (ABAR_VARIANT_COMMIT, default HEAD~1), for a before/after row in
the same run.  Usage: at_commit.py SRC_DIR"""
import os
import subprocess
import sys

src = sys.argv[1]
commit = os.environ.get("ABAR_VARIANT_COMMIT", "HEAD~1")
root = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
names = subprocess.check_output(["git", "-C", root, "ls-tree", "--name-only", commit, "src/"],
                                text=True).split()
for path in names:
    if os.path.isdir(os.path.join(root, path)):
        continue
    data = subprocess.check_output(["git", "-C", root, "show", f"{commit}:{path}"])
    with open(os.path.join(src, os.path.basename(path)), "wb") as f:
        f.write(data)
print(f"at_commit: src/ as at {commit} ({len(names)} files)")
