#!/usr/bin/env bash
# The main job: builds abar, runs the seeds' examples (each checks its own
# result and says what it shows), then a quick side-by-side benchmark.
# Installs its Debian packages first (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/apt_need.sh
apt_need cmake make gcc g++ clang libck-dev libomp-dev gnuplot-nox

build=${ABAR_BUILD_DIR:-build-demo}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DABAR_WITH_CUDA=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

echo "=== The seeds' examples, on CPU threads with abar"
"$build"/examples/example_demo

echo
echo "=== Benchmark summary (--quick; the full run: $build/bench/core/abar-bench-all --out DIR)"
"$build"/bench/core/abar-bench-all --quick --out "$build/bench-out"
echo "(table: $build/bench-out/bench.txt, CSV: bench.csv, plot: bench.png)"
