#!/usr/bin/env bash
# run.sh - runs the GenMC clients (clients.txt) under each memory model and
# prints one line per run: the verdict, the executions GenMC explored (and
# those it found blocked), the time.  scripts/genmc.sh check runs it.
#
#   run.sh [-m "rc11 imm"] [-c CORE_DIR] [-q] [-a] [NAME...]
#
# -m  the models (default both); -c  the core's sources to check (default
#     src/core; mutants.sh passes a patched copy); -q  stop at the first
#     failure and print only it (mutants.sh); -a  the clients marked `slow`
#     in clients.txt too (left out by default, so CI's stage stays short;
#     a NAME runs whether slow or not); NAME  only those clients.
# $GENMC is the binary, $GENMC_INCLUDE its headers (genmc.h), $CLANG and $OPT
# those of the LLVM it was built with.  Exit 0 when every run passed.
#
# The client is compiled here, not by GenMC, so that LLVM's inliner and SROA
# run on it first (and nothing else: -O1 without its passes, so that no
# function is marked noinline; no lifetime markers, which stop GenMC from
# seeing a spin loop as one):
# - clang returns a two-word struct (abar_token_t) by storing its words and
#   loading them back as one 128-bit aggregate, which GenMC refuses as a
#   mixed-size access; SROA keeps such temporaries in registers (and leaves
#   every atomic and every access to shared memory as it is);
# - GenMC's own inliner gave a local of one function the address of another
#   function's frame, which it then reported as freed memory; LLVM's inliner
#   moves every inlined local into its caller's frame, where SROA removes it.  Unfreed memory
# is no error here: the hazard records live as long as the process.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# Exit status: 0 every run passed, 1 a run failed (a verdict on the code),
# 2 nothing could be judged (no GenMC; with -q, a client that did not
# compile; without -q it is counted a failure, and the rest still run).
[ -n "${GENMC:-}" ] || { echo "run.sh: set GENMC to the genmc binary (scripts/genmc.sh check does)" >&2; exit 2; }
[ -n "${GENMC_INCLUDE:-}" ] || { echo "run.sh: set GENMC_INCLUDE to its include folder" >&2; exit 2; }
CLANG=${CLANG:-clang-15}
OPT=${OPT:-opt-15}
MODELS="rc11 imm"
CORE=$ROOT/src/core
QUIET=0
ALL=0
while getopts "m:c:qa" o; do
    case $o in
        m) MODELS=$OPTARG ;;
        c) CORE=$OPTARG ;;
        q) QUIET=1 ;;
        a) ALL=1 ;;
        *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
ONLY=" $* "
# NAME... in that order (clients.txt's order otherwise)
if [ $# -gt 0 ]; then
    order=$(for n in "$@"; do grep -E "^${n}[[:space:]]" "$HERE/clients.txt"; done)
else
    order=$(cat "$HERE/clients.txt")
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail=0
pass=0
while read -r name src knobs; do
    case $name in ''|'#'*) continue ;; esac
    [ "$ONLY" = "  " ] || [[ $ONLY == *" $name "* ]] || continue
    # knobs: -D... for the compiler; genmc:OPT for GenMC (e.g. genmc:-unroll=8);
    # slow: run only with -a or by name
    cflags= gopts= slow=0
    for k in $knobs; do
        case $k in
            genmc:*) gopts="$gopts ${k#genmc:}" ;;
            slow) slow=1 ;;
            *) cflags="$cflags $k" ;;
        esac
    done
    [ $slow = 0 ] || [ $ALL = 1 ] || [ "$ONLY" != "  " ] || continue
    for m in $MODELS; do
        out=$TMP/$name.$m.out
        t0=$(date +%s.%N)
        ll=$TMP/$name.ll
        if [ ! -f "$ll" ]; then
            # shellcheck disable=SC2086
            "$CLANG" -O1 -Xclang -disable-llvm-passes -Xclang -disable-lifetime-markers \
                -fno-discard-value-names -g -S -emit-llvm \
                -I"$GENMC_INCLUDE" -D__CONFIG_GENMC_INODE_DATA_SIZE=64 -I"$CORE" -I"$ROOT/include" \
                -I"$ROOT/src/ring" -I"$HERE" $cflags -o "$ll.0" "$HERE/$src" >"$out" 2>&1 &&
                "$OPT" -S -passes='cgscc(inline),sroa' -inline-threshold=100000 -o "$ll" "$ll.0" >>"$out" 2>&1
        fi
        # shellcheck disable=SC2086
        [ -f "$ll" ] && timeout "${ABAR_GENMC_TIMEOUT:-600}" "$GENMC" "-$m" -disable-estimation -disable-warn-on-unfreed-memory \
            $gopts ${ABAR_GENMC_OPTS:-} -input-from-bitcode-file "$ll" >>"$out" 2>&1
        rc=$?
        t1=$(date +%s.%N)
        execs=$(sed -n 's/^Number of complete executions explored: *\([0-9]*\).*/\1/p' "$out" | tail -1)
        blocked=$(sed -n 's/^Number of blocked executions seen: *\([0-9]*\).*/\1/p' "$out" | tail -1)
        secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
        if [ ! -f "$ll" ] && [ $QUIET = 1 ]; then # no verdict on the code (mutants.sh)
            echo "$name: the client did not compile (with $CORE):" >&2
            head -5 "$out" >&2
            exit 2
        fi
        # a run that completed no execution checked nothing: a failure
        if [ $rc -eq 0 ] && grep -q "No errors were detected" "$out" && [ "${execs:-0}" -gt 0 ]; then
            verdict=ok
            pass=$((pass + 1))
        else
            verdict=FAIL
            fail=$((fail + 1))
            [ $rc -eq 124 ] && verdict=TIMEOUT
        fi
        if [ $QUIET = 0 ] || [ $verdict != ok ]; then
            printf '%-16s %-5s %-7s executions %8s  blocked %6s  %8ss\n' "$name" "$m" "$verdict" \
                "${execs:-?}" "${blocked:-0}" "$secs"
        fi
        if [ $verdict != ok ]; then
            grep -m1 -E "^Error|error:|Assertion|race|freed|Liveness|violation" "$out" | sed 's/^/    /'
            [ -n "${ABAR_GENMC_KEEP:-}" ] && cp "$out" "$ABAR_GENMC_KEEP/$name.$m.out"
            [ $QUIET = 1 ] && exit 1
        fi
    done
done <<<"$order"
[ $QUIET = 1 ] || echo "genmc: $pass passed, $fail failed"
[ $fail -eq 0 ]
