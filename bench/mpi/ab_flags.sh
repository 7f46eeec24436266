#!/usr/bin/env bash
# ab_flags.sh OUT - the node engines of abar_mpi side by side, in one binary:
# ABAR_MPI_FLAGS=1 (a flag a rank; forced on for hierarchical rows on an
# oversubscribed node) against ABAR_MPI_FLAGS=0 (the shared counter, the
# direct way, or two levels), alternating, two rounds, ranks x threads
# from CFGS (default "2 2" "4 2" "8 2" "8 4" "16 2"), then the rank-failure
# test on the flags engine.  Staged as device_run.sh is (DIR/debs, DIR/bin);
# results: docs/mpi.md, bench/results/mpi-16c-500f01b-summary.txt.
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/out}; mkdir -p "$OUT"
. "$D/ompi_env.sh"
R="orterun --allow-run-as-root --bind-to none"
echo "# host: $(nproc) CPUs $(uname -r) $(grep -m1 'model name' /proc/cpuinfo)"
for rep in 1 2; do for f in 1 0; do for cfg in ${CFGS:-"2 2" "4 2" "8 2" "8 4" "16 2"}; do set -- $cfg
  echo "=== rep $rep FLAGS=$f np=$1 threads=$2"
  ABAR_MPI_FLAGS=$f timeout 120 $R -n "$1" "$D/bin/abar_mpi_bench" --iters 2000 --reps 3 --threads "$2" > "$OUT/r$rep-f$f-np$1x$2.txt" 2>&1
  grep -E "^lat (MPI_Barrier|abar_mpi\((shm|shm,hier)\)) |^ovl abar_mpi\(shm\) .*W = 2.0|^cpu abar_mpi\(shm\)" "$OUT/r$rep-f$f-np$1x$2.txt"
done; done; done
echo "=== rank failure np=3 shm (flags)"
timeout 60 $R -n 3 --enable-recovery "$D/bin/mpi_rank_failure" shm 2>&1 | grep -E "survivor|FAIL"
