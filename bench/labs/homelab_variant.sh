#!/usr/bin/env bash
# homelab_variant.sh - builds homelab with a second copy of the core beside the
# tree's own, so that one process runs both cores' abar_arrive_and_wait on the
# same lines (bench/labs/homelab.c, its last table).
#
#   bench/labs/homelab_variant.sh NAME CORE_DIR OUT
#
# CORE_DIR holds a variant of src/core (a copy, edited); its object files get
# every symbol they define prefixed v_ (objcopy), so both cores link into one
# static binary.  OUT: the binary.  Run from the tree's root.
set -euo pipefail
name=${1:?usage: homelab_variant.sh NAME CORE_DIR OUT}
core=${2:?}
out=${3:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in "$core"/*.c; do
  gcc -O2 -std=gnu11 -Iinclude -I"$core" -c "$c" -o "$tmp/$(basename "$c" .c).o"
done
nm --defined-only -g "$tmp"/*.o | awk 'NF == 3 { print $3 " v_" $3 }' | sort -u >"$tmp/syms"
for o in "$tmp"/*.o; do objcopy --redefine-syms="$tmp/syms" "$o"; done
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -Iinclude -Isrc/core -Ibench/common -DHOMELAB_VARIANT="\"$name\"" \
  bench/labs/homelab.c src/core/[a-z]*.c "$tmp"/*.o -static -pthread -o "$out"
