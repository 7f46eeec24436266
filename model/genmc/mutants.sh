#!/usr/bin/env bash
# mutants.sh - every atomic of the core's modelled sources whose order is
# weaker than seq_cst, weakened one step in a copy of src/core (acquire or
# release to relaxed, acq_rel to acquire and to release), and every seq_cst
# fence removed; each mutant is run against the clients (run.sh -q, in
# clients.txt's order, under RC11, then IMM for what RC11 lets through)
# until one fails.  src/core itself is never touched.
#
#   mutants.sh [-l] [-m "rc11 imm"] [-C "CLIENT..."] [FILE:LINE...]
#
# -l lists the mutants only; -C runs only those clients, in that order.
# Prints one line per mutant: where (file:line, function), the order and
# its mutant, the client that killed it, SURVIVED, or ERROR where run.sh
# gave no verdict (no GenMC, a client that did not compile), never counted
# a kill.  Exit 0 always (survivors are a finding to explain, in
# docs/reliability.md, not a failure).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LIST=0
MODELS="rc11 imm"
CLIENTS=
while getopts "lm:C:" o; do
    case $o in
        l) LIST=1 ;;
        C) CLIENTS=$OPTARG ;;
        m) MODELS=$OPTARG ;;
        *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The core as it is now: the list and every mutant come from this copy, so
# that edits to src/core during the run do not move the lines.
cp -r "$ROOT/src/core" "$TMP/base"
# The files core.h includes: the rest of src/core is the backend shim.h replaces.
FILES="abar_internal.h arrive.c arrive_wait.c futex.c hazard.c lifecycle.c policy.c tree.c wait.c wait.h"

# One line per mutant: file line occurrence from to function
# shellcheck disable=SC2086
python3 - "$TMP/base" $FILES >"$TMP/mutants" <<'PY'
import re, sys
core, files = sys.argv[1], sys.argv[2:]
tok = re.compile(r'memory_order_(acquire|release|acq_rel)\b|atomic_thread_fence\(memory_order_seq_cst\)')
fn = re.compile(r'^(static |extern )?[A-Za-z_].*\b([A-Za-z_][A-Za-z0-9_]*)\(')
for f in files:
    lines = open(f"{core}/{f}").read().split("\n")
    func = "-"
    for i, line in enumerate(lines, 1):
        m = fn.match(line)
        if m and not line.rstrip().endswith(";") and not line.startswith("#"):
            func = m.group(2)
        code = line.split("//")[0]
        if code.lstrip().startswith(("*", "/*")):
            continue
        for k, t in enumerate(tok.finditer(code)):
            if t.group(0).startswith("atomic_thread_fence"):
                print(f, i, k, "fence", "none", func)
            elif t.group(1) == "acq_rel":
                print(f, i, k, "acq_rel", "acquire", func)
                print(f, i, k, "acq_rel", "release", func)
            else:
                print(f, i, k, t.group(1), "relaxed", func)
PY

patch() { # file line occurrence to: in $TMP/core
    python3 - "$TMP/core/$1" "$2" "$3" "$4" <<'PY'
import re, sys
path, line, k, to = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
tok = re.compile(r'memory_order_(acquire|release|acq_rel)\b|atomic_thread_fence\(memory_order_seq_cst\)')
lines = open(path).read().split("\n")
ms = list(tok.finditer(lines[line - 1]))
t = ms[k]
new = "((void)0)" if to == "none" else "memory_order_" + to
lines[line - 1] = lines[line - 1][:t.start()] + new + lines[line - 1][t.end():]
open(path, "w").write("\n".join(lines))
PY
}

while read -r f line k from to func; do
    [ $# -eq 0 ] || [[ " $* " == *" $f:$line "* ]] || continue
    where="$f:$line $func"
    if [ $LIST = 1 ]; then
        printf '%-36s %-8s -> %s\n' "$where" "$from" "$to"
        continue
    fi
    rm -rf "$TMP/core"
    cp -r "$TMP/base" "$TMP/core"
    patch "$f" "$line" "$k" "$to"
    verdict=SURVIVED
    for m in $MODELS; do
        # shellcheck disable=SC2086
        res=$(bash "$HERE/run.sh" -q -m "$m" -c "$TMP/core" $CLIENTS)
        rc=$?
        if [ $rc -eq 1 ]; then
            verdict="killed: $(echo "$res" | head -1 | awk '{print $1, $2}') ($(echo "$res" | sed -n 2p | sed 's/^ *//' | cut -c1-60))"
            break
        elif [ $rc -ne 0 ]; then # no verdict: not a kill
            verdict="ERROR (run.sh could not judge it, status $rc)"
            break
        fi
    done
    printf '%-36s %-8s -> %-8s %s\n' "$where" "$from" "$to" "$verdict"
done <"$TMP/mutants"
