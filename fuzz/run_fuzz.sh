#!/usr/bin/env sh
# run_fuzz.sh BINARY SECONDS SEED_DIR NEW_DIR: a bounded libFuzzer run on the
# seed corpus (read-only; new inputs go to NEW_DIR); fails on any crash, leak,
# sanitizer report or hang (-timeout).  Prints libFuzzer's final stats
# (stat::number_of_executed_units: the executions).
set -u
bin=$1 secs=$2 seeds=$3 new=$4
mkdir -p "$new"
log=$new/../fuzz_short.log
"$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$new/" "$new" "$seeds" >"$log" 2>&1
rc=$?
tail -30 "$log"
[ "$rc" = 0 ] || echo "FAIL: fuzz_abar exited $rc (artifacts in $new)"
exit "$rc"
