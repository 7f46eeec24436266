#!/usr/bin/env python3
"""plot.py CSV PNG - the abar-bench plot with matplotlib, for machines without gnuplot."""
import csv
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
fig, axes = plt.subplots(1, 2, figsize=(14, 6.4))
for ax, scen, title in ((axes[0], "lat", "pinned, T = 1..CPUs"),
                        (axes[1], "oversub", "oversubscribed, unpinned")):
    series = {}
    for r in rows:
        if r["impl"].startswith("x-") and os.environ.get("ABAR_BENCH_PLOT_VARIANTS") != "1":
            continue
        if r["scenario"] == scen and r["param"] == "-":
            series.setdefault(r["impl"], []).append(
                (int(r["threads"]), float(r["median"]), float(r["min"]), float(r["max"])))
    for name, pts in series.items():
        pts.sort()
        xs = [p[0] for p in pts]
        ys = [p[1] for p in pts]
        err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
        ax.errorbar(xs, ys, yerr=err, marker="o", ms=3, capsize=2, label=name)
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_xlabel("threads T")
    ax.set_ylabel("ns per phase")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left")
fig.suptitle("abar-bench: ns per phase (median, min-max bars)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
