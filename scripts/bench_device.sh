#!/usr/bin/env bash
# bench_device.sh - abar-bench on a machine without compilers or packages
# (the 16-core GPU host), from binaries built here.
#
#   scripts/bench_device.sh prepare [cmake args]
#       here: builds the benchmarks statically where possible (build-bench-device/)
#       and stages them, with libomp.so.5 (LLVM libomp has no static archive),
#       in .carry/bin and .carry/lib (git-ignored), ready to travel.
#   scripts/bench_device.sh run OUTDIR [abar-bench options]
#       there: runs every staged binary (LD_LIBRARY_PATH=.carry/lib), merges the
#       rows and writes OUTDIR/bench.csv, bench.txt, bench.png (gnuplot, else
#       python3 + matplotlib) and log.txt.  Nothing is built or installed.
#
# With the device tool:  run(carry=[".carry"], command="bash scripts/bench_device.sh run $OUT")
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
shift || true

case $cmd in
prepare)
  build=$root/build-bench-device
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DABAR_BUILD_BENCH=ON -DABAR_BENCH_STATIC=ON "$@" >/dev/null
  cmake --build "$build" -j2 --target abar-bench abar-bench-omp-gomp-bin abar-bench-omp-llvm-bin
  rm -rf "$root/.carry/bin" "$root/.carry/lib"
  mkdir -p "$root/.carry/bin" "$root/.carry/lib"
  for b in abar-bench abar-bench-omp-gomp abar-bench-omp-llvm; do
    if [ -x "$build/bench/$b" ]; then cp "$build/bench/$b" "$root/.carry/bin/"; fi
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
  ls -la "$root/.carry/bin" "$root/.carry/lib"
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
    bash "$root/bench/run_all.sh" --bin "$root/.carry/bin" --out "$out" "$@"
  } 2>&1 | tee "$out/log.txt"
  ;;
*)
  sed -n 2,16p "$0"
  exit 2
  ;;
esac
