#!/usr/bin/env python3
"""Variant 'at_commit_slowwake' (measurement only): the core as at
ABAR_VARIANT_COMMIT (at_commit.py) with slowwake.py's late wake-ups, to
compare a change under emulated slow wake-ups with the core before it.
Usage: at_commit_slowwake.py CORE_SRC_DIR"""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
for script in ("at_commit.py", "slowwake.py"):
    subprocess.check_call([sys.executable, os.path.join(here, script), sys.argv[1]])
