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
cmake --build "$dir" -j"$(nproc)" >/dev/null
file "$dir"/libabar.so* | head -1
# harness time limits: qemu is slower than the host
export ABAR_TEST_TIMEOUT=${ABAR_TEST_TIMEOUT:-120}
(cd "$dir" && ctest --output-on-failure -j1 -E '^(model|fuzz_short)$')
