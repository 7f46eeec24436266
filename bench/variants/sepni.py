#!/usr/bin/env python3
"""Variant 'sepni' (measurement only, NOT safe for destroy): 'sep' plus
'noinside'.  Usage: sepni.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import noinside  # noqa: E402
import sep  # noqa: E402

if __name__ == "__main__":
    sep.apply(sys.argv[1])
    noinside.apply(sys.argv[1])
