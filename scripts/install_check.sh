#!/usr/bin/env bash
# install_check.sh - install abar into a temporary prefix and build a small
# consumer against the installed copy, with CMake (find_package(abar)) and
# with pkg-config, shared and static; run each.  Also checks that the man
# pages are installed and that libabar.so exports only public abar_ names.
#
#   scripts/install_check.sh            (uses $CC/cc; set KEEP=1 to keep the temp dir)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/abar-install-check.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "install_check: keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
prefix=$work/prefix
jobs=$(nproc 2>/dev/null || echo 2); [ "$jobs" -gt 2 ] && jobs=2
fails=0

step() { # name, command...
  local name=$1; shift
  if "$@" >"$work/log" 2>&1; then
    echo "PASS  $name"
  else
    echo "FAIL  $name"; sed 's/^/      /' "$work/log" | tail -25
    fails=$((fails + 1))
  fi
}

# 1. configure, build and install the library into the temporary prefix
step "configure abar (prefix $prefix)" \
  cmake -S "$root" -B "$work/build" -DCMAKE_INSTALL_PREFIX="$prefix" -DABAR_BUILD_BENCH=OFF
step "build abar" cmake --build "$work/build" -j"$jobs"
step "install abar (cmake --install)" cmake --install "$work/build"
if [ "$fails" -ne 0 ]; then echo "install_check: FAIL (the library did not install)"; exit 1; fi

pc=$(find "$prefix" -name abar.pc | head -1)
so=$(find "$prefix" -name 'libabar.so' | head -1)
have() { [ -n "$1" ] && [ -e "$1" ]; }
step "installed: include/abar.h" test -f "$prefix/include/abar.h"
step "installed: libabar.so" have "$so"
step "installed: libabar.a" have "$(dirname "${so:-/nonexistent}")/libabar.a"
step "installed: abar.pc" have "$pc"
step "installed: abarConfig.cmake" bash -c "find '$prefix' -name abarConfig.cmake | grep -q ."

# 2. the dynamic symbol table holds the public API only (internals are hidden)
check_symbols() {
  local bad
  bad=$(nm -D --defined-only "$so" | awk '$2 ~ /[TtDdBbRrVvWw]/ {print $3}' | grep -v '^abar_[a-z]' || true)
  if [ -n "$bad" ]; then echo "non-public symbols exported:"; echo "$bad"; return 1; fi
  nm -D --defined-only "$so" | awk '{print $3}' | grep -c '^abar_' 
}
step "libabar.so exports only abar_* names" check_symbols

# 3. man pages, including the .so links
# one page per function declared ABAR_API in the installed abar.h, plus abar(3)
check_man() {
  local pages
  pages=$(grep -oE 'ABAR_API[^(]*[^a-z_](abar_[a-z_0-9]+)\(' "$prefix/include/abar.h" |
          grep -oE 'abar_[a-z_0-9]+\($' | tr -d '(' | sort -u)
  [ "$(echo "$pages" | wc -w)" -ge 13 ] || { echo "found only: $pages"; return 1; }
  for page in abar $pages; do
    local out
    out=$(MANWIDTH=200 man -M "$prefix/share/man" 3 "$page" 2>&1) || { echo "man $page: $out"; return 1; }
    # here-strings, not `echo | grep -q`: under pipefail, grep -q leaving at its
    # first match can kill echo with SIGPIPE and fail a page that is fine
    grep -q "^NAME" <<<"$out" || { echo "man $page: no NAME section"; return 1; }
    grep -q "$page" <<<"$out" || { echo "man $page: the page does not mention $page"; return 1; }
  done
  echo "rendered: abar" $pages
}
if command -v man >/dev/null; then
  step "man pages render from the prefix (man -M)" check_man
else
  step "man pages installed (man(1) not available to render them)" \
    test -f "$prefix/share/man/man3/abar_wait.3"
fi

# 4. a consumer built with CMake: find_package(abar) and abar::abar / abar::abar_static
step "consumer: cmake configure (CMAKE_PREFIX_PATH)" \
  cmake -S "$root/docs/install-check" -B "$work/consumer-cmake" -DCMAKE_PREFIX_PATH="$prefix"
step "consumer: cmake build" cmake --build "$work/consumer-cmake"
step "consumer: run (cmake, shared abar::abar)" "$work/consumer-cmake/consumer"
step "consumer: run (cmake, static abar::abar_static)" "$work/consumer-cmake/consumer_static"

# 5. a consumer built with make and pkg-config
mkdir -p "$work/consumer-make"
step "consumer: pkg-config --cflags --libs abar" \
  env PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags --libs abar
step "consumer: make (pkg-config, PKG_CONFIG_PATH)" \
  env PKG_CONFIG_PATH="$(dirname "$pc")" make -C "$root/docs/install-check" O="$work/consumer-make"
step "consumer: run (pkg-config, shared, LD_LIBRARY_PATH)" \
  env LD_LIBRARY_PATH="$(dirname "$so")" "$work/consumer-make/consumer"
step "consumer: run (pkg-config, static)" "$work/consumer-make/consumer_static"

# 6. the drop-ins: abar.hpp from the prefix (C++20), and the interposer beside libabar
cxx_consumer() {
  printf '%s\n' '#include <abar.hpp>' \
    'int main() { abar::barrier<> b(1); b.arrive_and_wait(); return b.phase() == 1 ? 0 : 1; }' >"$work/hpp.cpp"
  ${CXX:-c++} -std=c++20 -Wall -Wextra -Werror $(env PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags abar) \
    "$work/hpp.cpp" $(env PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --libs --static abar) -o "$work/hpp" &&
    env LD_LIBRARY_PATH="$(dirname "$so")" "$work/hpp"
}
step "consumer: abar.hpp (C++20, pkg-config)" cxx_consumer
step "libabar-pthread.so installed beside libabar" test -e "$(dirname "$so")/libabar-pthread.so"

if [ "$fails" -ne 0 ]; then
  echo "install_check: FAIL ($fails steps failed)"
  exit 1
fi
echo "install_check: PASS"
