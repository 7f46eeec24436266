#!/usr/bin/env bash
# Builds and runs every test, and ends with the line "N passed, M failed":
#   gcc   (with the CUDA layer compiled for sm_90a/sm_80 when nvcc is present,
#          the MPI layer at 2 and 4 ranks, the benchmarks' self-check, the
#          Promela model check and a short fuzz run)
#   clang, ThreadSanitizer (with the MPI layer), AddressSanitizer + UBSan (the
#          library and its tests)
#   the probes: the library build line without clang's libFuzzer runtime, and
#          without clang, nvcc, MPI and spin (scripts/probe_check.sh)
#   the install check (find_package and pkg-config against an installed copy)
# (The aarch64 cross check, scripts/aarch64_check.sh, is run by hand: under
#  qemu-user it takes minutes and one case cannot run; docs/reliability.md.)
# Installs its Debian packages first (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)

. scripts/apt_need.sh
apt_need cmake make gcc g++ clang libclang-rt-dev pkg-config man-db libck-dev libomp-dev \
  openmpi-bin libopenmpi-dev spin libc++-dev libc++abi-dev

total_pass=0; total_fail=0
tally() { # name, passed, failed
  echo "--- $1: $2 passed, $3 failed"
  total_pass=$((total_pass + $2)); total_fail=$((total_fail + $3))
}

run_suite() { # name, cmake args... (CTEST_EXCLUDE: a ctest -E regex)
  local name=$1; shift
  local dir=$root/build-ci-$name log
  echo "=== $name"
  if ! cmake -S "$root" -B "$dir" -DABAR_BUILD_BENCH=OFF "$@" >"$dir.configure.log" 2>&1 ||
     ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
    tail -40 "$dir.configure.log" "$dir.build.log" 2>/dev/null || true
    tally "$name (build)" 0 1
    return
  fi
  log=$dir/ctest.log
  (cd "$dir" && ctest --output-on-failure -j1 ${CTEST_EXCLUDE:+-E "$CTEST_EXCLUDE"} 2>&1 | tee "$log") || true
  local p f
  p=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* +Passed' "$log" || true)
  f=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(\*\*\*|Failed|Timeout|Not Run)' "$log" || true)
  tally "$name" "$p" "$f"
}

cuda=(-DABAR_WITH_CUDA=OFF)
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cuda=(-DABAR_WITH_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc")
fi
host=(-DABAR_WITH_CUDA=OFF -DABAR_WITH_VERIFY=OFF -DABAR_WITH_MPI=OFF)

# ON: required (the packages above bring them), so none is left out unseen.
run_suite gcc   -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ "${cuda[@]}" \
                -DABAR_WITH_MPI=ON -DABAR_WITH_MODEL=ON -DABAR_WITH_FUZZ=ON -DABAR_BUILD_BENCH=ON
# clang, its uninitialised locals set to a pattern rather than whatever the
# stack held: a read of one fails the same way every run (a bool reads true).
run_suite clang -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${host[@]}" \
                -DCMAKE_C_FLAGS=-ftrivial-auto-var-init=pattern -DCMAKE_CXX_FLAGS=-ftrivial-auto-var-init=pattern
# TSan with the MPI layer too (its tests set their own TSAN_OPTIONS, with
# suppressions for Open MPI's uninstrumented libraries: tests/mpi/tsan.supp),
# and the MPI benchmark's smoke run (its threads share the work loop).
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
run_suite tsan  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${host[@]}" -DABAR_WITH_MPI=ON \
                -DABAR_SANITIZE=thread -DABAR_BUILD_MPI_BENCH=ON
# gcc's ASan: clang 14's reports a false stack-buffer-overflow in its own
# sigaltstack interceptor when a thread exits through pthread_cancel.
run_suite asan  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ "${host[@]}" -DABAR_SANITIZE=address

# The portable wait/wake backend (src/core/os_portable.c, what a system
# without its own gets), under gcc and TSan: the core, team, ring and C++
# tests.  Left out here, since the suites above run them on the same code:
# the *_tree and *_1cpu reruns, the examples, stress_short, tests/pthread.
portable_skip='_tree$|_1cpu$|^example_|^stress_|^pthread_'
CTEST_EXCLUDE=$portable_skip \
run_suite portable      -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ "${host[@]}" -DABAR_WAIT=portable
CTEST_EXCLUDE=$portable_skip TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
run_suite portable-tsan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${host[@]}" \
                        -DABAR_WAIT=portable -DABAR_SANITIZE=thread

# Windows: gcc-mingw-w64's build (cmake/mingw-w64.cmake), its tests under Wine.
apt_need gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix wine wine64 || true
if command -v x86_64-w64-mingw32-gcc-posix >/dev/null && command -v wine >/dev/null; then
  run_suite windows -DCMAKE_TOOLCHAIN_FILE="$root/cmake/mingw-w64.cmake"
else
  echo "=== windows: not run (gcc-mingw-w64 and wine could not be installed here)"
fi

# The README's library build line where optional tools are missing: clang
# without its libFuzzer runtime; no clang, nvcc, MPI or spin at all.
for c in nofuzz bare; do
  echo "=== probes: $c"
  if scripts/probe_check.sh "$c" >"$root/build-ci-probe-$c.log" 2>&1; then tally "probes $c" 1 0
  else tail -30 "$root/build-ci-probe-$c.log"; tally "probes $c" 0 1; fi
done

echo "=== install check"
if scripts/install_check.sh >"$root/build-ci-install.log" 2>&1; then tally install 1 0
else tail -30 "$root/build-ci-install.log"; tally install 0 1; fi

# The core's memory orders under RC11 (model/genmc/; IMM too with
# `scripts/genmc.sh check`), only where GenMC is built or installed already:
# CI never builds it.
if scripts/genmc.sh available; then
  echo "=== genmc"
  scripts/genmc.sh check -m rc11 >"$root/build-ci-genmc.log" 2>&1
  cat "$root/build-ci-genmc.log"
  p=$(sed -n 's/^genmc: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$root/build-ci-genmc.log")
  f=$(sed -n 's/^genmc: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$root/build-ci-genmc.log")
  tally genmc "${p:-0}" "${f:-1}"
else
  echo "=== genmc: skipped (no GenMC here; scripts/genmc.sh build makes one)"
fi


echo
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ] && [ "$total_pass" -gt 0 ]
