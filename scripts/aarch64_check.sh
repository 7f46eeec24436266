#!/usr/bin/env bash
# aarch64_check.sh - cross-build the library and the test suite for aarch64
# (Debian's gcc-aarch64-linux-gnu) and run the suite under qemu-user, so that
# the code is known to build and pass on a weakly ordered target using only
# standard C11 atomics and fences (no x86 intrinsic leaks in: abar__pause
# has an aarch64 branch).
#
#   scripts/aarch64_check.sh [build-dir]      (default: build-aarch64)
#
# Caveat: qemu-user runs the guest's threads on the host's CPUs with the
# host's (x86: TSO) memory order, so it checks the build and the logic on
# aarch64 code, not every reordering real Arm hardware may do; the model
# (model/) and the memory-order comments beside each atomic carry that part.
# The model and fuzz tests are host tools: left out here.
#
# What the emulator changes, and only under it (the variables are printed):
#   ABAR_TEST_SLOW=S      (default 10) the cases that run for a wall time run
#                         S times longer (tests/harness.h), since a phase is
#                         far slower under qemu; their minimum number of
#                         phases does not change.
#   ABAR_TEST_QEMU_USER=1 test_team's fork_after_launch is NOT RUN: qemu-user
#                         aborts in the child of a fork taken while other
#                         guest threads exist (its own assertion, also with a
#                         program that has no abar in it).  It prints
#                         "SKIP ... not run" and is not counted as passed; the
#                         list of cases not run ends this script's output.
#   ABAR_TEST_TIMEOUT     (default 120) the per-case time limit.
#   example_demo runs the other examples through the same emulator
#   (examples/CMakeLists.txt passes CMAKE_CROSSCOMPILING_EMULATOR to it).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-aarch64}
need=()
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v aarch64-linux-gnu-g++ >/dev/null || need+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "FAIL: missing ${need[*]} (apt-get install them)" >&2
    exit 2
  fi
fi
cmake -S . -B "$dir" -DABAR_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
  -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ \
  -DCMAKE_CROSSCOMPILING_EMULATOR="qemu-aarch64;-L;/usr/aarch64-linux-gnu" >/dev/null
jobs=$(nproc); [ "$jobs" -le 2 ] || jobs=2   # a shared machine: at most 2 compile jobs
cmake --build "$dir" -j"$jobs" >/dev/null
file -L "$dir"/libabar.so | head -1
# qemu is slower than the host: longer time limits and run times (see above)
export ABAR_TEST_TIMEOUT=${ABAR_TEST_TIMEOUT:-120}
export ABAR_TEST_SLOW=${ABAR_TEST_SLOW:-10}
export ABAR_TEST_QEMU_USER=1
echo "under qemu-user: ABAR_TEST_TIMEOUT=$ABAR_TEST_TIMEOUT ABAR_TEST_SLOW=$ABAR_TEST_SLOW ABAR_TEST_QEMU_USER=1"
rc=0
(cd "$dir" && ctest --output-on-failure -j1 -E '^(model|fuzz_short)$') || rc=$?
# the harness prints "SKIP <case>  not run: <why>"; CTest shows only failing
# tests' output, so the cases not run are listed here from its full log
log=$dir/Testing/Temporary/LastTest.log
echo "cases not run under qemu-user (not counted as passed):"
awk '/^[0-9]+\/[0-9]+ Test: / { t = $3 }
     /^SKIP / { sub(/^SKIP +/, ""); print "  " t ": " $0; n++ }
     END { if (!n) print "  none" }' "$log"
exit "$rc"
