#!/usr/bin/env bash
# netns_run.sh BINDIR OUT - abar_mpi across two emulated hosts on one Linux
# machine: two network namespaces joined by a veth pair, each with its own
# host name (UTS namespace) and an /etc/hosts naming both, so that Open MPI
# starts an orted per "host" (through an rsh agent that enters the other
# namespace instead of ssh) and sees two nodes: no shared-memory transport
# between them, and abar_mpi's default engine is the message engine.  A
# `tc netem` delay on both ends of the link stands in for a wire.
#
#   BINDIR  holds abar_mpi_bench and mpi_rank_failure (a -DABAR_WITH_MPI=ON
#           build's mpi/ folder)
#   OUT     gets one file per run and summary.txt
# Env: DELAYS (one-way delays in µs, default "0 25"), NPS (ranks, split
# evenly over the two hosts, default "2 4"), ITERS (default 2000), REPS (3),
# NOFAIL=1 skips the rank-failure runs, MPIRUN names Open MPI's launcher
# (default mpirun).  Needs root (namespaces, netem), ip, unshare, tc.  docs/mpi.md says what this does
# and does not emulate.
set -u
BIN=$(cd "${1:?usage: netns_run.sh BINDIR OUT}" && pwd)
OUT=${2:?usage: netns_run.sh BINDIR OUT}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
MPIRUN=${MPIRUN:-mpirun}
for c in ip unshare tc taskset "$MPIRUN"; do
  command -v $c >/dev/null || { echo "netns_run.sh: $c not found" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "netns_run.sh: needs root (network namespaces)" >&2; exit 2; }

tag=ab$$
W=$(mktemp -d /tmp/netns-run.XXXXXX)
NA=${tag}A NB=${tag}B HA=${tag}-hostA HB=${tag}-hostB
cleanup() { ip netns del "$NA" 2>/dev/null; ip netns del "$NB" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT

# the two hosts and the link between them
ip netns add "$NA" && ip netns add "$NB" || exit 2
ip link add "v${tag}a" type veth peer name "v${tag}b" || exit 2
ip link set "v${tag}a" netns "$NA" && ip link set "v${tag}b" netns "$NB" || exit 2
ip -n "$NA" addr add 10.77.0.1/24 dev "v${tag}a"
ip -n "$NB" addr add 10.77.0.2/24 dev "v${tag}b"
for n in "$NA:v${tag}a" "$NB:v${tag}b"; do
  ip -n "${n%%:*}" link set "${n#*:}" up && ip -n "${n%%:*}" link set lo up || exit 2
done
printf '127.0.0.1 localhost\n10.77.0.1 %s\n10.77.0.2 %s\n' "$HA" "$HB" > "$W/hosts"
# onhost HOST CMD...: run CMD as host HOST (its namespace, name and hosts file)
# Each host gets half of the machine's CPUs (CPUS_A, CPUS_B: taskset lists),
# as separate nodes have CPUs of their own.
n=$(nproc)
CA=${CPUS_A:-0-$(( n / 2 - 1 ))} CB=${CPUS_B:-$(( n / 2 ))-$(( n - 1 ))}
[ "$n" -ge 2 ] || { echo "netns_run.sh: needs 2 CPUs or more" >&2; exit 2; }
cat > "$W/onhost" <<EOF
#!/bin/sh
h=\$1; shift
case \$h in $HA) ns=$NA cpus=$CA ;; $HB) ns=$NB cpus=$CB ;; *) echo "onhost: unknown host \$h" >&2; exit 1 ;; esac
exec taskset -c "\$cpus" ip netns exec "\$ns" unshare --uts --mount sh -c 'hostname '"\$h"' && mount --bind $W/hosts /etc/hosts && exec "\$@"' sh "\$@"
EOF
# Open MPI's rsh agent: "agent HOST COMMAND-LINE" (a shell command line, as for ssh)
cat > "$W/agent" <<EOF
#!/bin/sh
h=\$1; shift
exec $W/onhost "\$h" sh -c "\$*"
EOF
chmod +x "$W/onhost" "$W/agent"

setdelay() { # one-way delay in µs on both ends (0: none)
  for n in "$NA:v${tag}a" "$NB:v${tag}b"; do
    ip netns exec "${n%%:*}" tc qdisc del dev "${n#*:}" root 2>/dev/null
    [ "$1" = 0 ] || ip netns exec "${n%%:*}" tc qdisc add dev "${n#*:}" root netem delay "${1}us" || return 1
  done
}
run() { # ranks, then the program and its arguments
  local np=$1; shift
  printf '%s slots=%d\n%s slots=%d\n' "$HA" $(( (np + 1) / 2 )) "$HB" $(( (np + 1) / 2 )) > "$W/hostfile"
  "$W/onhost" "$HA" timeout 300 "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none \
    --hostfile "$W/hostfile" --map-by node -n "$np" \
    --mca plm_rsh_agent "$W/agent" --mca oob_tcp_if_include 10.77.0.0/24 \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca btl tcp,vader,self "$@"
}

{
  echo "# $(nproc) CPUs, $(uname -r); $("$MPIRUN" --version 2>&1 | head -1)"
  echo "# hosts $HA (10.77.0.1, CPUs $CA) and $HB (10.77.0.2, CPUs $CB), network namespaces joined by a veth pair"
  run 2 hostname | sort | uniq -c | sed 's/^/# ranks on: /'
} > "$OUT/summary.txt"

IT="--iters ${ITERS:-2000} --reps ${REPS:-3}"
for d in ${DELAYS:-0 25}; do
  setdelay "$d" 2>/dev/null || { echo "# one-way delay ${d} µs: not run (tc netem failed: this kernel has no sch_netem?)" >> "$OUT/summary.txt"; continue; }
  for np in ${NPS:-2 4}; do
    f=$OUT/bench-np$np-delay${d}us.txt
    echo "=== np=$np over two hosts, one-way delay ${d} µs" > "$f"
    run "$np" "$BIN/abar_mpi_bench" $IT --threads 2 >> "$f" 2>&1
    echo "rc=$?" >> "$f"
  done
  if [ -z "${NOFAIL:-}" ]; then
    f=$OUT/fail-delay${d}us.txt
    : > "$f"
    for e in shm p2p; do
      echo "=== rank failure np=3 $e over two hosts, one-way delay ${d} µs" >> "$f"
      run 3 --enable-recovery "$BIN/mpi_rank_failure" "$e" >> "$f" 2>&1
      echo "rc=$?" >> "$f"
    done
  fi
done
setdelay 0
grep -h -E "^===|^# .*node|^lat |^ovl .*W = (2|8)\.0|survivor|FAIL|^rc=" "$OUT"/bench-*.txt "$OUT"/fail-*.txt 2>/dev/null >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
