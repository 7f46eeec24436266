#!/usr/bin/env bash
# probe_check.sh - the README's library build where optional tools are missing:
#   nofuzz  clang present, but its libFuzzer runtime missing (a clang that
#           fails on -fsanitize=fuzzer comes first in PATH)
#   bare    no clang, no nvcc, no MPI, no spin (PATH holds every other tool,
#           and CMake searches PATH only, not its system directories)
# Each runs the README's library build line, `cmake -S . -B build && cmake
# --build build && cmake --install build` (with the defaults, every probe
# runs), and checks that the parts are left out with their configure line.
# nofuzz leaves the CUDA layer out (-DABAR_WITH_CUDA=OFF): nvcc is slow on
# two cores, and the gcc suite compiles it anyway.
# Usage: scripts/probe_check.sh nofuzz|bare   (exit 0: passed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case=${1:?usage: probe_check.sh nofuzz|bare}
dir=$root/build-ci-probe-$case
rm -rf "$dir"
mkdir -p "$dir/bin"
args=()
expect=()

case $case in
nofuzz)
  real=$(command -v clang)
  cat >"$dir/bin/clang" <<EOF
#!/bin/sh
# clang without its libFuzzer runtime, as on a machine lacking libclang-rt-dev
for a in "\$@"; do
  case \$a in -fsanitize=*fuzzer*) echo "/usr/bin/ld: cannot find libclang_rt.fuzzer-x86_64.a" >&2; exit 1 ;; esac
done
exec "$real" "\$@"
EOF
  chmod +x "$dir/bin/clang"
  export PATH=$dir/bin:$PATH
  args=(-DABAR_WITH_CUDA=OFF)
  expect=("left out: the libFuzzer harness")
  ;;
bare)
  # Every program of the system's bin directories but the optional tools.
  for d in /usr/local/bin /usr/bin /bin; do
    for f in "$d"/*; do
      n=${f##*/}
      case $n in
        clang*|llvm-*|nvcc|mpi*|ompi*|orte*|opal*|spin) continue ;;
      esac
      [ -e "$dir/bin/$n" ] || ln -s "$f" "$dir/bin/$n"
    done
  done
  export PATH=$dir/bin
  unset CUDACXX CUDA_PATH CUDA_HOME MPI_HOME 2>/dev/null || true
  args=(-DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF)
  expect=("left out: the MPI layer" "left out: the CUDA layer" "left out: the model check"
          "left out: the libFuzzer harness")
  ;;
*)
  echo "unknown case $case" >&2
  exit 2
  ;;
esac

log=$dir/configure.log
if ! cmake -S "$root" -B "$dir/b" "${args[@]}" >"$log" 2>&1; then
  tail -30 "$log"
  echo "FAIL $case: configure"
  exit 1
fi
for e in "${expect[@]}"; do
  if ! grep -q "abar: $e" "$log"; then
    grep 'abar:' "$log" || true
    echo "FAIL $case: no configure line '$e'"
    exit 1
  fi
done
if grep -q 'fuzz_abar' "$dir/b/Makefile" "$dir/b/CMakeFiles/Makefile2" 2>/dev/null; then
  echo "FAIL $case: fuzz_abar is still a target"
  exit 1
fi
grep 'abar: left out' "$log"
if ! cmake --build "$dir/b" -j2 >"$dir/build.log" 2>&1 ||
   ! cmake --install "$dir/b" --prefix "$dir/inst" >"$dir/install.log" 2>&1; then
  tail -30 "$dir/build.log" "$dir/install.log" 2>/dev/null || true
  echo "FAIL $case: build or install"
  exit 1
fi
test -f "$dir/inst/include/abar.h"
echo "PASS $case"
