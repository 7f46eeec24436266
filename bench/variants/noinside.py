#!/usr/bin/env python3
"""Variant 'noinside' (measurement only, NOT safe: destroy can no longer see
threads inside abar_arrive_and_wait): drops the two RMWs on `inside` from
abar_arrive_and_wait, to price them.  Usage: noinside.py SRC_DIR"""
import sys

def sub(path, old, new, count=1):
    s = open(path).read()
    if s.count(old) < 1:
        sys.exit(f"{path}: pattern not found: {old!r}")
    if count == -1:  # the last occurrence
        i = s.rindex(old)
        s = s[:i] + new + s[i + len(old):]
    else:
        s = s.replace(old, new, count)
    open(path, "w").write(s)

def apply(src):
    w = src + "/wait.c"
    sub(w, "    atomic_fetch_add(&bi->inside, 1);\n    abar_token_t t = abar_arrive(b);",
        "    abar_token_t t = abar_arrive(b);")
    sub(w, "    atomic_fetch_sub_explicit(&bi->inside, 1, memory_order_release);\n    return r;\n}",
        "    return r;\n}", count=-1)

if __name__ == "__main__":
    apply(sys.argv[1])
