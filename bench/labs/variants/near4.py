#!/usr/bin/env python3
"""Variant 'near4' (measurement only): barriers of up to 4 threads keep their
release words on the arrivals' line (the pair layout), to price one line
against two at T = 3, 4.  Usage: near4.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sub import sub  # noqa: E402

sub(sys.argv[1] + "/abar_internal.h", "#define ABAR__PAIR_MAX 2u", "#define ABAR__PAIR_MAX 4u")
