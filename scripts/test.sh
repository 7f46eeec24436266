#!/usr/bin/env bash
# Builds and runs every test: gcc and clang, then ThreadSanitizer, then
# AddressSanitizer + UBSan.  Installs its Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends cmake make gcc g++ clang libclang-rt-dev \
    pkg-config >/dev/null
fi

total_pass=0; total_fail=0
run_suite() { # name, cmake args...
  local name=$1; shift
  local dir=$root/build-ci-$name
  echo "=== $name"
  cmake -S "$root" -B "$dir" -DABAR_BUILD_BENCH=OFF "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  local log=$dir/ctest.log
  if (cd "$dir" && ctest --output-on-failure -j1 2>&1 | tee "$log"); then :; fi
  local p f
  p=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* +Passed' "$log" || true)
  f=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(\*\*\*|Failed|Timeout|Not Run)' "$log" || true)
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
}

run_suite gcc   -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
run_suite clang -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" run_suite tsan  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DABAR_SANITIZE=thread
run_suite asan  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DABAR_SANITIZE=address

echo
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ] && [ "$total_pass" -gt 0 ]
