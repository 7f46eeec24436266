#!/usr/bin/env bash
# The main job: builds abar, runs the seeds' examples (each checks its own
# result; this prints each one's verdict), then a quick side-by-side
# benchmark, summarised as abar against the fastest rival per scenario.
# The examples' full output, the bench's full tables, CSV and plot are
# written beside the build and named at the end.
# Installs its Debian packages first (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/apt_need.sh
apt_need cmake make gcc g++ clang libck-dev libomp-dev python3-matplotlib gnuplot-nox

build=${ABAR_BUILD_DIR:-build-demo}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DABAR_WITH_CUDA=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

echo "=== The seeds' examples, on CPU threads with abar (each checks its own result)"
log=$build/examples.txt
rc=0
"$build"/examples/example_demo >"$log" 2>&1 || rc=$?
# one verdict line an example: its name and its own OK/FAIL line(s)
awk '
  /^==== example_/ { name = substr($2, 9); next }
  /^demo: / { print; next }
  /: (OK|FAIL|FAILED)|: (ok|FAILED)$|^seed004.* wrong/ {
    line = $0; sub(/^seed ?[0-9]+[_a-z]*:? */, "", line)
    printf "  %-22s %s\n", name, (length(line) > 100 ? substr(line, 1, 97) "..." : line) }
  /the split saved/ { printf "  %-22s %s\n", name, substr($0, 3) }
' "$log"
if [ "$rc" -ne 0 ]; then
  echo "(an example failed: its whole output follows)"
  cat "$log"
  exit "$rc"
fi

out=$build/bench-out
echo
echo "=== Benchmark, --quick, on $(nproc) CPUs: abar (default policy) against the fastest rival"
"$build"/bench/core/abar-bench-all --quick --out "$out" >/dev/null 2>"$out.log" ||
  { cat "$out.log"; exit 1; }
grep -h 'RIVALS MISSING' "$out/bench.txt" | sed 's/^## /  /' | sort -u || true
awk -f bench/core/summary.awk "$out/bench.csv"
echo
echo "Full tables: $out/bench.txt   CSV: $out/bench.csv   plot: $out/bench.png"
echo "Examples' output: $log   the full run: $build/bench/core/abar-bench-all --out DIR"
echo "The 16-core figures (median of three fresh machines): README.md, docs/bench.md"
