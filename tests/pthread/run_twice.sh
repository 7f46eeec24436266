#!/usr/bin/env bash
# run_twice.sh PROGRAM LIBABAR_PTHREAD [ARG...] - runs a POSIX barrier test
# program (with ARG...),
# compiled with no knowledge of abar, against the C library and then under
# LD_PRELOAD=LIBABAR_PTHREAD, and checks that the verdicts are the same, that
# all passed, and that the interposer did serve the barriers (its
# ABAR_PTHREAD_DEBUG line).  Then once more with ABAR_PTHREAD=0 (the
# opt-out): same verdicts, and the interposer says it is off.
set -euo pipefail
prog=$1 lib=$2
shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
"$prog" "$@" >"$tmp/libc" 2>&1 || { echo "against the C library:"; cat "$tmp/libc"; fail=1; }
LD_PRELOAD=$lib ABAR_PTHREAD_DEBUG=1 "$prog" "$@" >"$tmp/abar" 2>"$tmp/abar.err" || { echo "under LD_PRELOAD:"; cat "$tmp/abar" "$tmp/abar.err"; fail=1; }
LD_PRELOAD=$lib ABAR_PTHREAD=0 ABAR_PTHREAD_DEBUG=1 "$prog" "$@" >"$tmp/off" 2>"$tmp/off.err" || { echo "under LD_PRELOAD, ABAR_PTHREAD=0:"; cat "$tmp/off" "$tmp/off.err"; fail=1; }
grep -q '^abar-pthread: barriers on abar$' "$tmp/abar.err" || { echo "FAIL: the interposer did not serve the barriers"; cat "$tmp/abar.err"; fail=1; }
grep -q '^abar-pthread: off' "$tmp/off.err" || { echo "FAIL: ABAR_PTHREAD=0 did not turn the interposer off"; cat "$tmp/off.err"; fail=1; }
if grep -q 'barriers on abar' "$tmp/off.err"; then echo "FAIL: ABAR_PTHREAD=0 still used abar"; fail=1; fi
for v in abar off; do
  if ! diff <(grep '^case ' "$tmp/libc") <(grep '^case ' "$tmp/$v") >"$tmp/diff"; then
    echo "FAIL: verdicts differ (C library vs $v):"; cat "$tmp/diff"; fail=1
  fi
done
echo "C library: $(tail -1 "$tmp/libc")"
echo "LD_PRELOAD: $(tail -1 "$tmp/abar")  [$(tr '\n' ';' <"$tmp/abar.err")]"
echo "LD_PRELOAD, ABAR_PTHREAD=0: $(tail -1 "$tmp/off")"
[ $fail -eq 0 ] && echo "run_twice: PASS" || { echo "run_twice: FAIL"; exit 1; }
