#!/bin/bash
# ab_commits.sh - the core at HEAD against another commit's, alternating ALTS (6)
# times, T = 1..4, abar alone (there, after
#   ABAR_VARIANT_COMMIT=X ABAR_BENCH_VARIANTS="prev:bench/labs/variants/at_commit.py" \
#     scripts/bench_device.sh prepare
# here; run from the repository root with OUT set, .carry travelling).
# Prints each T's six medians (ns per phase) for abar-default (HEAD) and
# x-prev-default (commit X), then pairlab's central and abar rows (.carry/labs).
cd .carry/bin || exit 1
for r in $(seq "${ALTS:-6}"); do
  timeout 60 ./abar-bench --abar-only --only lat --threads 4 --rounds 5 >> "$OUT/ab2.csv" 2>>"$OUT/err"
  timeout 60 ./abar-bench-var-prev --abar-only --only lat --threads 4 --rounds 5 >> "$OUT/ab2.csv" 2>>"$OUT/err"
done
grep "^lat," "$OUT/ab2.csv" | awk -F, '$2 ~ /^(abar-default|x-prev-default)$/ {a[$3" "$2]=a[$3" "$2]" "int($5)} END{for(k in a) print k, a[k]}' | sort -n
../labs/pairlab 0 1 7 2>&1 | grep -E "central |abar "
