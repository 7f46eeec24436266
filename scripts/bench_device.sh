#!/usr/bin/env bash
# bench_device.sh - abar-bench on a machine without compilers or packages
# (the 16-core GPU host), from binaries built here.
#
#   scripts/bench_device.sh prepare [cmake args]
#       here: installs the Debian packages the build and every rival need
#       (as root, or through sudo), builds the benchmarks statically where
#       possible (build-bench-device/) and stages them, with libomp.so.5
#       (LLVM libomp has no static archive), in .carry/bin and .carry/lib
#       (git-ignored), ready to travel, with ring_bench and a build of the
#       core on the portable wait backend (rows x-portable-*); the labs
#       (pairlab, quadlab, homelab, wakelab) in .carry/labs.
#   scripts/bench_device.sh run OUTDIR [abar-bench options]
#       there: runs every staged binary (LD_LIBRARY_PATH=.carry/lib), merges the
#       rows and writes OUTDIR/bench.csv, bench.txt, bench.png (python3 + matplotlib,
#       else gnuplot) and log.txt; then the labs, if .carry/labs came
#       along.  Nothing is built or installed.  The latency table runs T =
#       1..16, then 24, 32, 48, 56, 60, 64 and every CPU where the host has
#       them; the oversubscribed rows 2x and 4x the CPUs; the steal scenario
#       (thieves taking ABAR_BENCH_STEAL_CPUS CPUs, default 2) a quarter,
#       half, three quarters and all of the CPUs.  Every table says the
#       steal the host itself showed while it ran.  Then the teams, the
#       ring (OUTDIR/ring.csv; ABAR_BENCH_RING=0 leaves it out) and the
#       labs (those carried in .carry/labs).  The log says when each stage
#       began.
#
# With the device tool, the README's table:
#   run(carry=[".carry/bin", ".carry/lib", ".carry/COMMIT"], command="bash scripts/bench_device.sh run $OUT")
# and to run the labs after it, carry ".carry/labs" too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
shift || true

case $cmd in
prepare)
  # Every rival in the table needs its package here (the binaries travel,
  # the packages do not): ck (libck-dev) and LLVM's libomp (libomp-dev).
  . "$root/scripts/apt_need.sh"
  apt_need cmake make gcc g++ libck-dev libomp-dev
  # Built from a clean export of HEAD (not the working tree), so the rows
  # name one commit: .carry/COMMIT.
  build=$root/build-bench-device
  rm -rf "$build/tree"
  mkdir -p "$build/tree"
  git -C "$root" archive HEAD | tar -x -C "$build/tree"
  cmake -S "$build/tree" -B "$build/b" -DCMAKE_BUILD_TYPE=Release -DABAR_BUILD_BENCH=ON -DABAR_BENCH_STATIC=ON \
    -DBUILD_TESTING=OFF "$@" >/dev/null
  # A rival the build left out would be missing from every table there:
  # say so now, here, where the package can still be installed.
  if ! grep -q '^ABAR_BENCH_CK_LINKS:INTERNAL=1' "$build/b/CMakeCache.txt" 2>/dev/null; then
    echo "bench_device.sh: Concurrency Kit not found: the ck rivals will be MISSING (apt-get install libck-dev, then prepare again)" >&2
  fi
  cmake --build "$build/b" -j2 --target abar-bench abar-bench-omp-gomp-bin abar-bench-omp-llvm-bin \
    abar-bench-pthread abar_pthread >/dev/null
  # the teams' rows (bench/team): abar_run and the clusters against each
  # OpenMP runtime's parallel region; a runtime the build left out is skipped
  cmake --build "$build/b" -j2 --target team-bench-gomp-bin >/dev/null 2>&1 || echo "team-bench-gomp not built" >&2
  cmake --build "$build/b" -j2 --target team-bench-llvm-bin >/dev/null 2>&1 || echo "team-bench-llvm not built" >&2
  rm -rf "$root/.carry/bin" "$root/.carry/lib" "$root/.carry/labs"
  mkdir -p "$root/.carry/bin" "$root/.carry/lib" "$root/.carry/labs"
  git -C "$root" rev-parse HEAD >"$root/.carry/COMMIT"
  for b in abar-bench abar-bench-omp-gomp abar-bench-omp-llvm abar-bench-pthread; do
    if [ -x "$build/b/bench/core/$b" ]; then cp "$build/b/bench/core/$b" "$root/.carry/bin/"; fi
  done
  for b in team-bench-gomp team-bench-llvm; do
    if [ -x "$build/b/bench/team/$b" ]; then cp "$build/b/bench/team/$b" "$root/.carry/bin/"; fi
  done
  # the interposer for the drop-in rows (run_all.sh finds it in ../lib)
  if [ -e "$build/b/src/pthread/libabar-pthread.so" ]; then
    cp -L "$build/b/src/pthread/libabar-pthread.so" "$root/.carry/lib/libabar-pthread.so"
  fi
  # pairlab (bench/labs/pairlab.c): where the time goes at T = 2
  gcc -O2 -std=gnu11 -I"$build/tree/include" -I"$build/tree/src/core" -I"$build/tree/bench/common" \
    "$build/tree/bench/labs/pairlab.c" \
    "$build/tree"/src/core/*.c -static -pthread -o "$root/.carry/labs/pairlab" ||
    echo "pairlab not built" >&2
  # quadlab (bench/labs/quadlab.c): where the time goes at T = 3, 4
  gcc -O2 -std=gnu11 -I"$build/tree/include" -I"$build/tree/src/core" -I"$build/tree/bench/common" \
    "$build/tree/bench/labs/quadlab.c" \
    "$build/tree"/src/core/*.c -static -pthread -o "$root/.carry/labs/quadlab" ||
    echo "quadlab not built" >&2
  # homelab (bench/labs/homelab.c): how much a barrier's address moves its time
  gcc -O2 -std=gnu11 -I"$build/tree/include" -I"$build/tree/src/core" -I"$build/tree/bench/common" \
    "$build/tree/bench/labs/homelab.c" \
    "$build/tree"/src/core/*.c -static -pthread -o "$root/.carry/labs/homelab" ||
    echo "homelab not built" >&2
  # wakelab (bench/labs/wakelab.c): wake every parked thread at once, or a tree
  gcc -O2 -std=gnu11 -I"$build/tree/bench/common" "$build/tree/bench/labs/wakelab.c" -static -pthread \
    -o "$root/.carry/labs/wakelab" || echo "wakelab not built" >&2
  # the ring's rows (bench/ring): abar_ring against ck_ring, a mutex/condvar
  # queue and seed 002's form; the hand-off against a ping-pong
  if cmake --build "$build/b" -j2 --target ring_bench >/dev/null 2>&1; then
    cp "$build/b/bench/ring/ring_bench" "$root/.carry/bin/"
  else
    echo "ring_bench not built: no ring rows" >&2
  fi
  # Variants of the core to measure (ABAR_BENCH_VARIANTS="name:patch.py ..."
  # or "name:-DOPTION=VALUE"): a patch script edits a copy of src/core, an
  # option configures the copy's build; its abar rows are renamed x-name-*.
  # The portable wait backend (-DABAR_WAIT=portable) is always one of them.
  for v in portable:-DABAR_WAIT=portable ${ABAR_BENCH_VARIANTS:-}; do
    name=${v%%:*}; patch=${v#*:}
    rm -rf "$build/var-$name"; cp -r "$build/tree" "$build/var-$name"
    varg=()
    case $patch in
      -D*) varg=("$patch") ;;
      *) python3 "$patch" "$build/var-$name/src/core" ;;
    esac
    cmake -S "$build/var-$name" -B "$build/var-$name/b" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
      -DABAR_BENCH_STATIC=ON -DABAR_BENCH_VARIANT="x-$name" "${varg[@]}" >/dev/null
    cmake --build "$build/var-$name/b" -j2 --target abar-bench >/dev/null
    cp "$build/var-$name/b/bench/core/abar-bench" "$root/.carry/bin/abar-bench-var-$name"
  done
  # shared libraries the binaries still need, other than glibc's
  for b in "$root"/.carry/bin/*; do
    { ldd "$b" 2>/dev/null || true; } | awk '/=> \// { print $3 }' | while read -r lib; do
      case $(basename "$lib") in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
        *) cp -L "$lib" "$root/.carry/lib/" ;;
      esac
    done
  done
  ls -la "$root/.carry/bin" "$root/.carry/lib" "$root/.carry/labs"
  ;;
run)
  out=${1:?usage: bench_device.sh run OUTDIR [abar-bench options]}
  shift
  mkdir -p "$out"
  export LD_LIBRARY_PATH=$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  {
    echo "# host: $(uname -srm), $(nproc) CPUs online"
    grep -m1 'model name' /proc/cpuinfo || true
    (command -v lscpu >/dev/null && lscpu | grep -E '^(CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|Model name|L[123])') || true
    for b in "$root"/.carry/bin/*; do echo "# $(basename "$b"): $(ldd "$b" 2>&1 | tr '\n' ' ' | cut -c1-200)"; done
    stage() { echo "== [$(date -u +%T), ${SECONDS}s] $*"; }
    stage "tables"
    bash "$root/bench/core/run_all.sh" --bin "$root/.carry/bin" --out "$out" "$@"
    stage "teams"
    # teams at every CPU: one team of P = every CPU, clusters of 2 and of
    # teams of 8, against each runtime's parallel region and barrier
    for b in team-bench-gomp team-bench-llvm; do
      [ -x "$root/.carry/bin/$b" ] || continue
      echo "== $b $(nproc) ${ABAR_TEAM_ROUNDS:-7}"
      "$root/.carry/bin/$b" "$(nproc)" "${ABAR_TEAM_ROUNDS:-7}"
    done | tee "$out/team.txt"
    stage "ring"
    if [ -x "$root/.carry/bin/ring_bench" ] && [ "${ABAR_BENCH_RING:-1}" != 0 ]; then
      echo "== ring_bench -r 3"
      "$root/.carry/bin/ring_bench" -r 3 | tee "$out/ring.csv" || echo "ring_bench FAILED (status $?)"
    fi
    stage "labs"
    labs=$root/.carry/labs
    if [ -x "$labs/wakelab" ]; then
      "$labs/wakelab" "$(nproc)" 5 | tee "$out/wakelab.txt" || echo "wakelab FAILED"
    fi
    if [ -x "$labs/pairlab" ]; then
      for pair in "0 1" "3 12"; do "$labs/pairlab" $pair 7; done | tee "$out/pairlab.txt"
    fi
    if [ -x "$labs/quadlab" ]; then
      { "$labs/quadlab" 3 7; "$labs/quadlab" 4 7; "$labs/quadlab" 4 7 3 12 7 9; } | tee "$out/quadlab.txt"
    fi
    if [ -x "$labs/homelab" ]; then
      { "$labs/homelab" 3 5; "$labs/homelab" 4 5; } | tee "$out/homelab.txt"
    fi
    stage "done"
  } 2>&1 | tee "$out/log.txt"
  ;;
*)
  sed -n 2,20p "$0"
  exit 2
  ;;
esac
