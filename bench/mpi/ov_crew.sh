#!/usr/bin/env bash
# ov_crew.sh OUT - the oversubscribed hierarchical rows on 16 CPUs (8 ranks x
# 4 threads and 16 x 2), with the ranks' threads kept for every run (as an
# application keeps its team; the bench's default) and created anew for
# each run (--fresh-threads: how the rows were measured before; see
# docs/mpi.md); 8 x 4 also bound to each rank's share of the CPUs
# (--bind-to core --map-by slot:PE=2), and 4 x 2 (not oversubscribed)
# for the 1.5x target's row.  SETTLE=S: the kept teams' latency runs first
# run S untimed phases (bench_mpi.c --settle).  CONFIGS: which of the
# configurations (default all).  ROUNDS rounds (default 3), each
# configuration in turn; each line: MPI_Barrier us and ratio | the
# hierarchical row's us and ratio | the sched row (bench_mpi.c).
# Staged as device_run.sh is (DIR/debs, DIR/bin); results: docs/mpi.md.
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/out}; mkdir -p "$OUT/raw"
. "$D/ompi_env.sh"
echo "# host: $(nproc) CPUs $(uname -r)"
for rep in $(seq 1 "${ROUNDS:-3}"); do
  for cfg in ${CONFIGS:-8x4-none-kept 8x4-none-fresh 8x4-core-kept 16x2-none-kept 16x2-none-fresh 4x2-none-kept}; do
    set -- $(echo "$cfg" | tr 'x-' '  ')
    if [ "$3" = core ]; then bind="--bind-to core --map-by slot:PE=$((16 / $1))"; else bind="--bind-to none"; fi
    ft=${SETTLE:+--settle $SETTLE}; [ "$4" = fresh ] && ft=--fresh-threads
    f=$OUT/raw/r$rep-np$1x$2-$3-$4.txt
    timeout 60 orterun --allow-run-as-root $bind -n "$1" "$D/bin/abar_mpi_bench" --iters 2000 --reps 3 \
      --threads "$2" $ft > "$f" 2>&1
    echo "$rep ${1}x$2 $3 $4 $(grep -E "^lat (MPI_Barrier|abar_mpi\(shm,hier\)) " "$f" |
      awk '{printf "%s %s | ", $5, $6}') $(grep "^sched" "$f" | cut -c32-)"
  done
done
