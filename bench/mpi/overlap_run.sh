#!/usr/bin/env bash
# overlap_run.sh OUT - the latency and overlap rows of abar_mpi_bench on
# shared memory and over TCP (--mca btl tcp,self), at 2, 4 and 8 ranks,
# ROUNDS rounds (default 2) alternating the two transports.  Staged as
# device_run.sh is (DIR/debs with Open MPI's packages, DIR/bin with
# abar_mpi_bench; BIN=dir overrides the latter); every file of output goes
# to OUT, and the rows that docs/mpi.md quotes to stdout.
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/out}; mkdir -p "$OUT"
. "$D/ompi_env.sh"
R="orterun --allow-run-as-root --bind-to none"
B=${BIN:-$D/bin}
echo "# host: $(nproc) CPUs $(uname -r) $(grep -m1 'model name' /proc/cpuinfo)"
for rep in $(seq "${ROUNDS:-2}"); do for t in shm tcp; do for np in ${NPS:-2 4 8}; do
  f=$OUT/r$rep-$t-np$np.txt
  echo "=== round $rep $t np=$np"
  if [ $t = shm ]; then timeout 100 $R -n "$np" "$B/abar_mpi_bench" --iters 2000 --reps 5 > "$f" 2>&1
  else timeout 100 $R -n "$np" --mca btl tcp,self "$B/abar_mpi_bench" --iters 2000 --reps 5 > "$f" 2>&1; fi
  grep -E "^lat (MPI_Barrier|abar_mpi\((shm|p2p|p2p,progress)\)) |^ovl (MPI_Ibarrier\+MPI_Wait|abar_mpi\((shm|p2p|p2p,progress)\)) .*W = 2.0|^cpu abar_mpi\((shm|p2p)\) " "$f"
done; done; done
