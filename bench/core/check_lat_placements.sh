#!/usr/bin/env bash
# check_lat_placements.sh - the latency table's placements work (CTest
# bench_lat_placements): abar-bench-all with 4 rounds runs each lat pass in
# a child process (8 passes of 1 round, each in its own order of the
# implementations) and the OpenMP binaries' lat in ABAR_BENCH_OMP_PROCS
# processes, whose rows are merged.  Fails unless every in-process row has
# its 8 rounds (one from each pass's child, through the shared mapping) and
# every OpenMP row the rounds of all 3 processes.
#
#   check_lat_placements.sh BINDIR
set -euo pipefail
bin=${1:?usage: check_lat_placements.sh BINDIR}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ABAR_BENCH_OMP_PROCS=3 bash "$bin/abar-bench-all" --bin "$bin" --out "$out" --rounds 4 --only lat --threads 2 \
  >"$out/log" 2>&1 || { cat "$out/log"; exit 1; }
awk -F, '
  $1 != "lat" { next }
  { n++ }
  $2 ~ /^omp-/ { omp++; if ($8 != 12) { print "omp row without its 3 processes x 4 rounds: " $0; bad++ } next }
  $2 ~ /^pthread-(dyn|abar)$/ { if ($8 != 8) { print "drop-in row without 8 rounds: " $0; bad++ } next }
  { if ($8 != 8) { print "row without 8 rounds (one a pass): " $0; bad++ } }
  $2 == "abar-default" { abar++ }
  END {
    if (abar != 2) { print "abar-default rows: " abar + 0 ", expected 2 (T = 1, 2)"; bad++ }
    printf "%d lat rows, %d of them OpenMP (merged), %d wrong\n", n, omp, bad
    exit bad > 0
  }' "$out/bench.csv"
