#!/usr/bin/env python3
"""Variant 'sepx' (measurement only, NOT SPEC-safe, see xadd.py): 'sep' plus
the single fetch_sub arrival of 'xadd'.  Usage: sepx.py SRC_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sep  # noqa: E402
import xadd  # noqa: E402

def apply(src):
    sep.apply(src)
    xadd.apply_arrive(src)

if __name__ == "__main__":
    apply(sys.argv[1])
