#!/usr/bin/env python3
"""plot.py CSV PNG [TITLE] - the abar-bench picture (matplotlib).

Three panels, read in this order:
  left         pinned, T = 1..CPUs: ns per phase, log scale.  abar's rows
               bold and in colour, the rivals thin and grey, each line named
               at its right end (no legend over the data); c11-central, a
               one-line counter with no features, dashed: the floor.
  right, top   abar / fastest rival at each T (the 1.0 line: below it abar
               is faster), the rival named on its bar.
  right, bottom
               oversubscribed (T = 2x and 4x the CPUs, unpinned): every
               barrier as a bar, fastest first, abar's in colour.

Rows left out: experimental variants (x-*, unless ABAR_BENCH_PLOT_VARIANTS=1),
the drop-in rows (abar-cpp, pthread-abar, pthread-dyn: the same barriers
under another API; bench.txt has them) and c11-twoline.
"""
import csv
import math
import os
import re
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ABAR = {"abar-default": ("#1f5fbf", 3.2, "abar (default)"),
        "abar-spin": ("#4fa3e0", 1.8, "abar spin"),
        "abar-park": ("#9ec9ef", 1.4, "abar park")}
FLOOR = "c11-central"
SKIP = re.compile(r"^(abar-cpp|pthread-abar|pthread-dyn|c11-twoline|pingpong.*)$")
RIVAL_COLOURS = ["#4d4d4d", "#6b6b6b", "#888888", "#a0a0a0", "#5e6b73",
                 "#7d7368", "#8a8f96", "#6f6f5f", "#9a8f8f", "#767f8a"]
NOT_RIVAL = re.compile(r"^(abar|pingpong|c11|x-|pthread-)")


def load(path):
    data = {}
    for r in csv.DictReader(open(path)):
        if r["param"] != "-" or r["scenario"] not in ("lat", "oversub"):
            continue
        name = r["impl"]
        if name.startswith("x-") and os.environ.get("ABAR_BENCH_PLOT_VARIANTS") != "1":
            continue
        data.setdefault(r["scenario"], {}).setdefault(name, {})[int(r["threads"])] = (
            float(r["median"]), "lb" in r["flags"])
    return data


def fmt_ns(v):
    if v >= 1e6:
        return "%.0f ms" % (v / 1e6) if v >= 1e7 else "%.1f ms" % (v / 1e6)
    if v >= 1e3:
        return "%.0f µs" % (v / 1e3) if v >= 1e4 else "%.1f µs" % (v / 1e3)
    return "%.0f ns" % v


def spread(ys, gap):
    """Move label positions (log10 values) apart by at least gap, keeping order."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    pos = [ys[i] for i in order]
    for _ in range(200):
        moved = False
        for k in range(1, len(pos)):
            if pos[k] - pos[k - 1] < gap:
                d = (gap - (pos[k] - pos[k - 1])) / 2
                pos[k - 1] -= d
                pos[k] += d
                moved = True
        if not moved:
            break
    out = [0.0] * len(ys)
    for k, i in enumerate(order):
        out[i] = pos[k]
    return out


def pinned(ax, lat):
    labels = []
    tmax = max(max(s) for s in lat.values())
    rivals = sorted(n for n in lat if not NOT_RIVAL.match(n))
    for i, name in enumerate(rivals):
        pts = sorted(lat[name].items())
        xs = [t for t, _ in pts]
        ys = [v for _, (v, _) in pts]
        c = RIVAL_COLOURS[i % len(RIVAL_COLOURS)]
        ax.plot(xs, ys, color=c, lw=1.0, alpha=0.8, marker=".", ms=3, zorder=2)
        labels.append((xs[-1], ys[-1], name, c, "normal"))
    if FLOOR in lat:
        pts = sorted(lat[FLOOR].items())
        ax.plot([t for t, _ in pts], [v for _, (v, _) in pts], color="#222222", lw=1.0,
                ls="--", zorder=2)
        labels.append((pts[-1][0], pts[-1][1][0], "c11-central (floor)", "#222222", "normal"))
    for name in ("abar-park", "abar-spin", "abar-default"):
        if name not in lat:
            continue
        c, lw, label = ABAR[name]
        pts = sorted(lat[name].items())
        ax.plot([t for t, _ in pts], [v for _, (v, _) in pts], color=c, lw=lw, marker="o",
                ms=lw + 1.5, zorder=5 if name == "abar-default" else 4)
        labels.append((pts[-1][0], pts[-1][1][0], label, c, "bold"))
    ax.set_yscale("log")
    lo = min(v for s in lat.values() for v, _ in s.values())
    hi = max(v for s in lat.values() for v, _ in s.values())
    gap = 0.03 * (math.log10(hi) - math.log10(lo / 1.4))
    ys = spread([math.log10(v) for _, v, _, _, _ in labels], gap)
    for (x, v, name, c, weight), y in zip(labels, ys):
        ax.annotate(name, xy=(x, v), xytext=(1.03, 10 ** y), textcoords=("axes fraction", "data"),
                    color=c, fontsize=8.5, fontweight=weight, va="center", annotation_clip=False,
                    arrowprops=dict(arrowstyle="-", color=c, lw=0.5, alpha=0.6))
    ax.set_xlim(0.5, tmax + 0.5)
    ax.set_xticks(range(1, tmax + 1, 1 if tmax <= 16 else max(1, tmax // 16)))
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", axis="y", alpha=0.1)
    ax.set_xlabel("threads T (pinned, one a CPU)")
    ax.set_ylabel("ns per phase (median; lower is better)")
    ax.set_title("arrive_and_wait, every barrier", loc="left", fontsize=11, fontweight="bold")
    ax.set_ylim(lo / 1.4, None)


SHORT = {"ck-dissemination": "ck diss.", "ck-combining": "ck comb.", "ck-tournament": "ck tourn.",
         "ck-centralized": "ck central", "ck-mcs": "ck mcs", "std-barrier": "std::barrier",
         "omp-gomp": "libgomp", "omp-llvm": "libomp"}


def ratio_panel(ax, lat):
    rows = []
    for t in sorted(lat.get("abar-default", {})):
        best = None
        for name, s in lat.items():
            if NOT_RIVAL.match(name) or t not in s:
                continue
            if best is None or s[t][0] < best[1]:
                best = (name, s[t][0])
        if best:
            rows.append((t, lat["abar-default"][t][0] / best[1], best[0]))
    xs = [t for t, _, _ in rows]
    rs = [r for _, r, _ in rows]
    cols = [ABAR["abar-default"][0] if r < 1 else "#b0b0b0" for r in rs]
    ax.bar(xs, [min(r, 1.5 if max(rs) > 1.5 else r) for r in rs], color=cols, width=0.75, zorder=3)
    ax.axhline(1.0, color="#c03030", lw=1.6, zorder=4)
    top = 1.5 if max(rs) > 1.5 else max(1.2, max(rs) * 1.05)
    for t, r, name in rows:
        shown = min(r, top)
        ax.text(t, shown + 0.015, ("%.2f" % r) + ("  ↑" if r > top else ""), ha="center",
                va="bottom", fontsize=7.5, fontweight="bold" if r < 1 else "normal",
                color="#1a1a1a")
        ax.text(t, 0.04, SHORT.get(name, name), rotation=90, ha="center", va="bottom",
                fontsize=7, color="white" if r < 1 else "#222222", zorder=5)
    ax.set_ylim(0, top * 1.1)
    ax.set_xlim(0.4, max(xs) + 0.6)
    ax.set_xticks(xs if len(xs) <= 16 else xs[::max(1, len(xs) // 16)])
    ax.set_xlabel("threads T")
    ax.set_ylabel("abar / fastest rival (lower: abar faster)")
    ax.set_title("abar / fastest rival at each T (below the red line: abar faster)", loc="left",
                 fontsize=11, fontweight="bold")
    return sum(1 for r in rs if r < 1), len(rs)
    ax.grid(True, axis="y", alpha=0.3, zorder=0)


def oversub_panel(ax, over, ncpu):
    ts = sorted({t for s in over.values() for t in s})
    names = [n for n in over if not SKIP.match(n)]
    groups = []
    for t in ts:
        vals = sorted(((over[n][t][0], over[n][t][1], n) for n in names if t in over[n]))
        groups.append((t, vals))
    y = 0
    yt, yl = [], []
    for t, vals in groups:
        for v, lb, n in vals:
            is_abar = n in ABAR
            c = ABAR[n][0] if is_abar else "#b5b5b5"
            ax.barh(y, v, color=c, height=0.75, zorder=3)
            ax.text(v * 1.08, y, ("≥ " if lb else "") + fmt_ns(v), va="center", fontsize=7,
                    fontweight="bold" if is_abar else "normal", color=c if is_abar else "#444444")
            yt.append(y)
            yl.append(ABAR[n][2] if is_abar else n)
            y += 1
        y += 1.6
    ax.set_yticks(yt)
    ax.set_yticklabels(yl, fontsize=7.5)
    for lab in ax.get_yticklabels():
        if lab.get_text().startswith("abar"):
            lab.set_color(ABAR["abar-default"][0])
            lab.set_fontweight("bold")
    ax.invert_yaxis()
    ax.set_xscale("log")
    vmax = max(v for _, vals in groups for v, _, _ in vals)
    vmin = min(v for _, vals in groups for v, _, _ in vals)
    ax.set_xlim(vmin / 2, vmax * 12)
    # group headers
    y = 0
    for t, vals in groups:
        ax.text(vmax * 11, y - 0.95, "T = %d threads on %d CPUs" % (t, ncpu), ha="right",
                fontsize=9, fontweight="bold", va="center", color="#333333")
        y += len(vals) + 1.6
    ax.set_ylim(y - 1.4, -1.6)
    ax.set_xlabel("ns per phase (log; shorter is better; ≥: hit the time limit)")
    ax.set_title("oversubscribed: more threads than CPUs", loc="left", fontsize=11,
                 fontweight="bold")
    ax.grid(True, axis="x", alpha=0.3, zorder=0)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: plot.py CSV PNG [TITLE]")
    data = load(sys.argv[1])
    lat = {n: s for n, s in data.get("lat", {}).items() if not SKIP.match(n) or n == FLOOR}
    lat.pop("c11-twoline", None)
    over = data.get("oversub", {})
    ncpu = max((t for s in lat.values() for t in s), default=0)
    fig = plt.figure(figsize=(17, 9.5))
    gs = fig.add_gridspec(2, 2, width_ratios=[1.25, 1], height_ratios=[1, 1.25],
                          left=0.05, right=0.985, top=0.855, bottom=0.07, wspace=0.42, hspace=0.3)
    verdict = None
    if lat:
        pinned(fig.add_subplot(gs[:, 0]), lat)
        if "abar-default" in lat:
            verdict = ratio_panel(fig.add_subplot(gs[0, 1]), lat)
    if over:
        oversub_panel(fig.add_subplot(gs[1, 1]), over, ncpu)
    title = "abar against every CPU barrier, %d CPUs" % ncpu
    if verdict:
        title += ": faster than the fastest rival at %d of %d thread counts" % verdict
    fig.suptitle(title, x=0.05, ha="left", fontsize=14, fontweight="bold")
    fig.text(0.05, 0.9, (sys.argv[3] + "\n" if len(sys.argv) > 3 else "") +
             "abar in blue (bold: the default policy; spin, park: ABAR_WAIT_SPIN, ABAR_WAIT_PARK), "
             "every rival in grey, c11-central dashed (a one-line counter with no features: the "
             "floor); medians of the run's rounds.", fontsize=9.5, color="#444444", va="bottom")
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
