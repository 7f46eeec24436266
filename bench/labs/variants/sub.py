"""Shared by the variant scripts: replace text in a copied source file."""
import sys


def sub(path, old, new):
    s = open(path).read()
    if old not in s:
        sys.exit(f"{path}: pattern not found: {old!r}")
    open(path, "w").write(s.replace(old, new, 1))
