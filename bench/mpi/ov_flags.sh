#!/usr/bin/env bash
# ov_flags.sh OUT - oversubscribed hierarchical rows (8 ranks x 4 threads and
# 16 x 2 on 16 CPUs): the default (the flags engine) against
# ABAR_MPI_FLAGS=0 (two levels, the default before 84b8558), with the ranks
# unbound (--bind-to none) and bound to their share of the CPUs
# (--bind-to core --map-by slot:PE=16/ranks), two rounds alternating.
# MODES="new" runs the default alone; each line ends with the sched row
# (switches and CPU changes a phase, bench_mpi.c).
# Staged as device_run.sh is (DIR/debs, DIR/bin); results: docs/mpi.md,
# bench/results/mpi-16c-84b8558-oversub.txt.
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/out}; mkdir -p "$OUT/raw"
. "$D/ompi_env.sh"
echo "# host: $(nproc) CPUs $(uname -r)"
for rep in 1 2; do for b in none core; do for m in ${MODES:-new old}; do for cfg in "8 4 2" "16 2 1"; do set -- $cfg
  unset ABAR_MPI_FLAGS
  [ $m = old ] && export ABAR_MPI_FLAGS=0
  if [ $b = core ]; then bind="--bind-to core --map-by slot:PE=$3"; else bind="--bind-to none"; fi
  f=$OUT/raw/r$rep-$m-np$1x$2-$b.txt
  timeout 45 orterun --allow-run-as-root $bind -n "$1" "$D/bin/abar_mpi_bench" --iters 2000 --reps 3 --threads "$2" > "$f" 2>&1
  echo "$rep $b $m ${1}x$2 $(grep -E "^lat (MPI_Barrier|abar_mpi\(shm,hier\)) " "$f" | awk '{printf "%s %s | ", $5, $6}') $(grep "^sched" "$f" | cut -c32-)"
done; done; done; done
