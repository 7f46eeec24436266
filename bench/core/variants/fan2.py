#!/usr/bin/env python3
"""Variant 'fan2' (measurement only): the arrival tree from 3 threads, with
leaves of 2 units instead of 4, to price pairs of arrivals combined before
the state word at T = 3..8 against the single counter.  Usage: fan2.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sub import sub  # noqa: E402

h = sys.argv[1] + "/abar_internal.h"
sub(h, "#define ABAR__TREE_MIN        9u", "#define ABAR__TREE_MIN        3u")
sub(h, "#define ABAR__TREE_FANOUT     4u", "#define ABAR__TREE_FANOUT     2u")
