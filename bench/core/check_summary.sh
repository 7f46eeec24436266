#!/bin/sh
# check_summary.sh SRC_DIR - bench/core/summary.awk (scripts/demo.sh's
# tables) on a recorded run: each row's fastest rival and ratio as worked
# out by hand from the CSV, T thinned to 1..4, powers of two and the
# largest, and never a floor, a drop-in row or abar itself as the rival.
set -eu
src=${1:?usage: check_summary.sh SRC_DIR}
out=$(awk -f "$src/bench/core/summary.awk" "$src/bench/results/device-16c-63b75c2-e.csv")
fail=0
expect() {
  printf '%s\n' "$out" | grep -Eq "$1" || { echo "missing: $1"; fail=1; }
}
expect '^  2 +135 +ck-dissemination +185 +0\.73$'
expect '^  3 +407 +ck-combining +486 +0\.84$'
expect '^  16 +985 +ck-dissemination +1278 +0\.77$'
expect '^  32 +5794 +omp-llvm +12195 +0\.48$'
expect '^  psum +1238 +ck-dissemination +2276 +0\.54$'
# lat rows: T = 1, 2, 3, 4, 8, 16 only (16 CPUs)
n=$(printf '%s\n' "$out" | awk '/^lat:/ { on = 1; next } /^$/ { on = 0 } on && $1 ~ /^[0-9]+$/' | wc -l)
[ "$n" -eq 6 ] || { echo "lat rows: $n, expected 6"; fail=1; }
if printf '%s\n' "$out" | grep -Eq '  (abar-|c11-|pingpong|pthread-|x-|work )'; then
  echo "a floor, drop-in or abar row taken as the rival"; fail=1
fi
[ $fail -eq 0 ] && echo "summary.awk: every expected row" || { printf '%s\n' "$out"; exit 1; }
