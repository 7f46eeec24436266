#!/usr/bin/env python3
"""headline.py - the README's headline figures from several runs of abar-bench-all.

    bench/core/headline.py RUN1/bench.csv RUN2/bench.csv RUN3/bench.csv ...

For every thread count of the `lat` scenario: abar-default's ns per phase,
the fastest rival's (pthread, std::barrier, both OpenMPs, the ck barriers:
whichever is fastest in that run) and c11-central's (the one-line floor),
each as the median over the runs with the lowest and highest run beside it;
and the two ratios (abar / fastest rival, abar / c11-central), each computed
within a run first, then the median over runs, lowest and highest.  A rival
missing from any run is named; the oversubscribed, completion and cpuburn
rows are summarised the same way.  Markdown on stdout."""
import csv
import statistics
import sys

RIVALS = ["pthread", "std-barrier", "omp-gomp", "omp-llvm", "ck-centralized", "ck-combining",
          "ck-dissemination", "ck-tournament", "ck-mcs"]


def load(path):
    rows = {}
    with open(path) as f:
        for r in csv.reader(line for line in f if not line.startswith("#")):
            if len(r) < 5 or r[0] == "scenario":
                continue
            rows[(r[0], r[1], int(r[2]), r[3])] = float(r[4])
    return rows


def mlh(values):
    values = sorted(values)
    return statistics.median(values), values[0], values[-1]


def fmt(v, digits=0):
    m, lo, hi = v
    if digits:
        return f"{m:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"
    return f"{m:.0f} ({lo:.0f}–{hi:.0f})"


def main(paths):
    runs = [load(p) for p in paths]
    print(f"{len(runs)} runs: " + ", ".join(paths) + "\n")
    missing = sorted({r for run in runs for r in RIVALS
                      if not any(k[0] == "lat" and k[1] == r for k in run)})
    print("Rivals missing from a run: " + (", ".join(missing) if missing else "none") + "\n")
    ts = sorted({k[2] for run in runs for k in run if k[0] == "lat"})
    print("| T | abar-default | fastest rival | abar / fastest rival | c11-central | abar / c11-central |")
    print("| ---: | ---: | --- | ---: | ---: | ---: |")
    for t in ts:
        a, b, c, ra, rc, names = [], [], [], [], [], []
        for run in runs:
            av = run.get(("lat", "abar-default", t, "-"))
            rv = [(run[("lat", r, t, "-")], r) for r in RIVALS if ("lat", r, t, "-") in run]
            cv = run.get(("lat", "c11-central", t, "-"))
            if av is None or not rv:
                continue
            best, name = min(rv)
            a.append(av); b.append(best); names.append(name); ra.append(av / best)
            if cv:
                c.append(cv); rc.append(av / cv)
        if not a:
            continue
        who = "/".join(sorted(set(names), key=names.index))
        print(f"| {t} | {fmt(mlh(a))} | {who}: {fmt(mlh(b))} | {fmt(mlh(ra), 2)} | "
              f"{fmt(mlh(c)) if c else '-'} | {fmt(mlh(rc), 2) if rc else '-'} |")
    for scen, label in (("oversub", "oversubscribed (unpinned)"), ("completion", "completion (psum)"),
                        ("cpuburn", "CPU ns burnt in a 10 ms wait")):
        keys = sorted({k for run in runs for k in run if k[0] == scen and not k[1].startswith("x-")},
                      key=lambda k: (k[2], k[3], k[1]))
        if not keys:
            continue
        print(f"\n{label}: median (lowest–highest run)\n")
        print("| impl | T | param | ns |")
        print("| --- | ---: | --- | ---: |")
        for k in keys:
            vals = [run[k] for run in runs if k in run]
            print(f"| {k[1]} | {k[2]} | {k[3]} | {fmt(mlh(vals))} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
