#!/usr/bin/env bash
# device_run.sh OUT [quick] - the abar_mpi benchmark (and the rank-failure
# test) on a machine without MPI or compilers: Open MPI from Debian packages
# unpacked there, binaries built elsewhere.  Stage a folder DIR beside it:
#   DIR/run.sh   this script, and ompi_env.sh beside it (the environment)
#   DIR/debs/    apt-get download openmpi-bin openmpi-common libopenmpi3 libpmix2
#                libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7
#                libevent-2.1-7 libmunge2   (Debian 12: Open MPI 4.1.4)
#   DIR/bin/     abar_mpi_bench, mpi_rank_failure (from a -DABAR_WITH_MPI=ON build;
#                they link libmpi.so.40 and libc only)
# then run `bash DIR/run.sh OUT` there.  Rows go to OUT/{shm,tcp,tcp2,hier,fail}.txt.
# Env: NPS (rank counts, default "2 4 8"), HIER ("ranks threads" pairs),
# OVERSUB=--oversubscribe where the machine has fewer CPUs than ranks,
# NOFAIL=1 skips the rank-failure runs, NONETNS=1 the two-host runs of
# DIR/netns_run.sh (staged beside run.sh, if it is).  docs/mpi.md says what
# the TCP and namespace runs emulate.
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/out}; Q=${2:-}
mkdir -p "$OUT"
. "$D/ompi_env.sh"
R="orterun --allow-run-as-root --bind-to none ${OVERSUB:-}"
B=$D/bin
echo "# host: $(nproc) CPUs, $(uname -r), $(ldd --version | head -1)"; $R --version | head -1
$R -n 2 --oversubscribe hostname || { echo "mpirun does not work"; exit 1; }
IT="--iters 2000 --reps 3"; [ -n "$Q" ] && IT="--iters 300 --reps 3"
NPS=${NPS:-2 4 8}
for np in $NPS; do
  echo "=== shm np=$np (new)"; timeout 120 $R -n $np $B/abar_mpi_bench $IT --threads 2
done > "$OUT/shm.txt" 2>&1
for np in $NPS; do
  echo "=== tcp np=$np (new, --mca btl tcp,self)"; timeout 150 $R -n $np --mca btl tcp,self $B/abar_mpi_bench $IT --threads 2
done > "$OUT/tcp.txt" 2>&1
{ echo "=== tcp two groups np=8: ranks 0-3 on cores 0-7, 4-7 on cores 8-15, btl tcp,self"
  h=$(hostname); n=$(nproc); rf=$OUT/rankfile
  for r in 0 1 2 3 4 5 6 7; do g=$(( r / 4 )); echo "rank $r=$h slot=$(( g * n / 2 ))-$(( (g + 1) * n / 2 - 1 ))"; done > "$rf"; cat "$rf"
  timeout 150 orterun --allow-run-as-root ${OVERSUB:-} -n 8 --rankfile "$rf" --mca btl tcp,self $B/abar_mpi_bench $IT --threads 2 || true
} > "$OUT/tcp2.txt" 2>&1
{ for cfg in ${HIER:-"4 2" "8 4" "16 2"}; do set -- $cfg
    echo "=== hier np=$1 threads=$2 ($(( $1 * $2 )) threads on $(nproc) CPUs)"
    timeout 150 $R -n $1 $B/abar_mpi_bench $IT --threads $2
  done; } > "$OUT/hier.txt" 2>&1
[ -n "${NOFAIL:-}" ] || { for e in shm p2p; do echo "=== rank failure np=3 $e"; timeout 60 $R -n 3 --enable-recovery $B/mpi_rank_failure $e; done
  echo "=== rank failure np=3 p2p over tcp"; timeout 60 $R -n 3 --enable-recovery --mca btl tcp,self $B/mpi_rank_failure p2p; } > "$OUT/fail.txt" 2>&1
# two hosts in network namespaces (netns_run.sh beside this script; root)
if [ -f "$D/netns_run.sh" ] && [ -z "${NONETNS:-}" ]; then
  MPIRUN=orterun NPS="${NPS}" ITERS=${IT_NETNS:-2000} bash "$D/netns_run.sh" "$B" "$OUT/netns" > "$OUT/netns.txt" 2>&1 ||
    echo "netns_run.sh failed: $OUT/netns.txt" >> "$OUT/netns.txt"
fi
grep -h -E "^===|^lat (MPI_Barrier|abar_mpi\((shm|p2p|p2p,progress|shm,hier|p2p,hier)\) )|survivor|FAIL" "$OUT"/*.txt
