#!/usr/bin/env python3
"""Variant 'lfpoll' (measurement only): the first, lean spin polls the
release with an lfence between loads instead of a pause (about 140 cycles
on recent Intel cores): one load in flight at a time, so no machine clear
when the line changes, and a poll every few nanoseconds instead of every
~45.  Usage: lfpoll.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sub import sub  # noqa: E402

sub(sys.argv[1] + "/wait.h", "        abar__pause();\n    }\n    return false;",
    "        __builtin_ia32_lfence();\n    }\n    return false;")
