#!/usr/bin/env python3
"""homelab_summary.py - one line per same-lines table of homelab's output.

    bench/labs/homelab_summary.py FILE

FILE: homelab's output (bench/labs/homelab.c), its same-lines tables each
after a line "## NAME" (a block name of your choosing).  For each block,
the median over the candidate addresses of each row's median divided by
c11-twoline's at the same address; and, for a binary built with a second
core (bench/labs/homelab_variant.sh), that row against `abar` at each
address and their median: the variant's price without the placement
lottery.
"""
import re
import statistics
import sys

ROW = re.compile(r"\s+(\d\d)/(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")
BASE = ("twoline", "flat", "flat-hz", "ticket", "abar")


def main(path):
    blocks, name = {}, None
    for line in open(path):
        if line.startswith("## "):
            name = line[3:].strip()
            blocks[name] = {}
            continue
        m = ROW.match(line)
        if m and name is not None:
            blocks[name].setdefault(m.group(2), {})[m.group(1)] = float(m.group(4))
    for name, rows in blocks.items():
        if "twoline" not in rows:
            continue
        tw = rows["twoline"]
        ratios = "  ".join(f"{r} {statistics.median(rows[r][c] / tw[c] for c in tw):.3f}"
                           for r in rows if r != "twoline")
        line = f"{name:22s} twoline {statistics.median(tw.values()):6.1f} ns | {ratios}"
        for v in (r for r in rows if r not in BASE):
            per = [rows[v][c] / rows["abar"][c] for c in sorted(tw)]
            line += f" | {v}/abar " + " ".join(f"{x:.3f}" for x in per)
            line += f" median {statistics.median(per):.3f}"
        print(line)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
