#!/usr/bin/env bash
# abar-bench-all - runs abar-bench and the OpenMP companions found beside it
# (or in --bin DIR), merges their rows into one CSV, prints the tables and
# draws the plot (bench/core/plot.py with python3 + matplotlib; gnuplot,
# plainer, where matplotlib is missing).
#
#   abar-bench-all [--bin DIR] [--out DIR] [any abar-bench option: --quick, --threads N, ...]
#   abar-bench-all --from CSV [--out DIR]     tables and plot of an earlier run's CSV
#
# Writes DIR/bench.csv (every row), DIR/bench.txt (the tables), DIR/bench.png.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here
out=.
from=
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

csv=$out/bench.csv
if [ -n "$from" ]; then
  [ "$(cd "$(dirname "$from")" && pwd)/$(basename "$from")" = "$(cd "$out" && pwd)/bench.csv" ] || cp "$from" "$csv"
  args=("(from $from)")
else
n=0
for b in abar-bench abar-bench-omp-gomp abar-bench-omp-llvm; do
  if [ -x "$bin/$b" ]; then
    echo "== [${SECONDS}s] $b ${args[*]:-}" >&2
    "$bin/$b" "${args[@]}" --csv "$tmp/$b.csv" >&2
    n=$((n + 1))
  else
    echo "== $b: not built, skipped" >&2
  fi
done
# An OpenMP runtime keeps its team's barrier where the process's first
# parallel region put it, so one process is one placement of it in memory,
# and at T = 3, 4 the placement alone moves a barrier's time by 4-47 %
# (abar-bench runs each pass in a process of its own for that: abar_bench.c
# scen_lat).  So the OpenMP binaries run the lat scenario in
# ABAR_BENCH_OMP_PROCS processes (default 8, as abar-bench's 8 passes) and
# a lat row is the median of their medians, lowest min, highest max.
omp_procs=${ABAR_BENCH_OMP_PROCS:-8}
for b in abar-bench-omp-gomp abar-bench-omp-llvm; do
  [ -e "$tmp/$b.csv" ] && grep -q '^lat,' "$tmp/$b.csv" || continue
  for k in $(seq 2 "$omp_procs"); do
    echo "== [${SECONDS}s] $b ${args[*]:-} --only lat (process $k of $omp_procs)" >&2
    "$bin/$b" "${args[@]}" --only lat --csv "$tmp/$b.lat$k.csv" >&2
  done
  [ "$omp_procs" -gt 1 ] || continue
  awk -F, -v OFS=, '
    FNR == 1 { next }
    $1 != "lat" { if (FILENAME == first) other[++no] = $0; next }
    { k = $2 SUBSEP $3 SUBSEP $4
      if (!(k in n)) { order[++nk] = k; row[k] = $0; lo[k] = $6; hi[k] = $7 }
      m[k, ++n[k]] = $5; rounds[k] += $8; phases[k] += $9
      if ($6 < lo[k]) lo[k] = $6; if ($7 > hi[k]) hi[k] = $7
      if ($11 ~ /lb/) lb[k] = 1 }
    END {
      for (j = 1; j <= nk; j++) {
        k = order[j]; c = n[k]
        for (a = 1; a <= c; a++) v[a] = m[k, a]
        for (a = 2; a <= c; a++) for (b = a; b > 1 && v[b] < v[b - 1]; b--) { t = v[b]; v[b] = v[b - 1]; v[b - 1] = t }
        med = c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
        split(row[k], f, ",")
        f[5] = sprintf("%.1f", med); f[6] = lo[k]; f[7] = hi[k]; f[8] = rounds[k]; f[9] = phases[k]
        f[11] = lb[k] ? "lb" : ""
        line = f[1]; for (a = 2; a <= 11; a++) line = line OFS f[a]
        print line
      }
      for (j = 1; j <= no; j++) print other[j]
    }' first="$tmp/$b.csv" "$tmp/$b.csv" "$tmp/$b".lat*.csv >"$tmp/$b.merged"
  { head -n1 "$tmp/$b.csv"; cat "$tmp/$b.merged"; } >"$tmp/$b.csv.new" && mv "$tmp/$b.csv.new" "$tmp/$b.csv"
done
# the drop-in rows: pthread_barrier_wait in a dynamically linked binary, as it
# is (pthread-dyn) and under LD_PRELOAD=libabar-pthread.so (pthread-abar)
plib=${ABAR_PTHREAD_LIB:-}
for c in "$bin/libabar-pthread.so" "$bin/../lib/libabar-pthread.so" "$bin/../../src/pthread/libabar-pthread.so"; do
  [ -n "$plib" ] || { [ -e "$c" ] && plib=$c; }
done
if [ -x "$bin/abar-bench-pthread" ] && [ -n "$plib" ]; then
  echo "== [${SECONDS}s] abar-bench-pthread, as it is and under LD_PRELOAD=$plib" >&2
  "$bin/abar-bench-pthread" "${args[@]}" --tag pthread-dyn --csv "$tmp/pt-dyn.csv" >&2
  LD_PRELOAD=$plib "$bin/abar-bench-pthread" "${args[@]}" --tag pthread-abar --csv "$tmp/pt-abar.csv" >&2
else
  echo "== abar-bench-pthread or libabar-pthread.so not found: no drop-in (LD_PRELOAD) rows" >&2
fi
# experimental builds against variants of src/ (scripts/bench_device.sh): abar rows only,
# the scenarios ABAR_BENCH_VAR_ONLY names (lat), latency rows from T = ABAR_BENCH_VAR_LAT_MIN
for v in "$bin"/abar-bench-var-*; do
  [ -x "$v" ] || continue
  b=$(basename "$v")
  echo "== [${SECONDS}s] $b ${args[*]:-} --only ${ABAR_BENCH_VAR_ONLY:-lat}" >&2
  ABAR_BENCH_LAT_MIN=${ABAR_BENCH_VAR_LAT_MIN:-1} "$v" "${args[@]}" --only "${ABAR_BENCH_VAR_ONLY:-lat}" \
    --csv "$tmp/$b.csv" >&2
done
# runs of abar-bench under an environment (ABAR_BENCH_ENV_VARIANTS="name:VAR=VALUE ..."),
# e.g. spin200us:ABAR_SPIN_NS=200000: abar rows only, named x-NAME-*
for v in ${ABAR_BENCH_ENV_VARIANTS:-}; do
  [ -x "$bin/abar-bench" ] || break
  name=${v%%:*}; assign=${v#*:}
  echo "== abar-bench under $assign ${args[*]:-} --only ${ABAR_BENCH_VAR_ONLY:-lat}" >&2
  env "$assign" "$bin/abar-bench" "${args[@]}" --abar-only --tag "x-$name" --only "${ABAR_BENCH_VAR_ONLY:-lat}" \
    --csv "$tmp/abar-bench-var-env-$name.csv" >&2
done
[ $n -gt 0 ] || { echo "abar-bench-all: no benchmark binary in $bin" >&2; exit 1; }

head -n1 "$tmp/abar-bench.csv" >"$csv" 2>/dev/null || echo "scenario,impl,threads,param,median,min,max,rounds,phases,unit,flags" >"$csv"
for b in abar-bench abar-bench-omp-gomp abar-bench-omp-llvm; do
  if [ -e "$tmp/$b.csv" ]; then tail -n +2 "$tmp/$b.csv"; fi
done >>"$csv"
for f in "$tmp"/abar-bench-var-*.csv; do
  if [ -e "$f" ]; then tail -n +2 "$f"; fi
done >>"$csv"
for f in "$tmp"/pt-dyn.csv "$tmp"/pt-abar.csv; do
  if [ -e "$f" ]; then awk -F, 'NR > 1 && $2 ~ /^pthread-/' "$f"; fi
done >>"$csv"
fi

# ---- tables -----------------------------------------------------------------
tables() {
  awk -F, '
  NR == 1 { next }
  { key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
    med[key] = $5; lo[key] = $6; hi[key] = $7; fl[key] = $11
    if (!(($1, $2) in seenimpl)) { seenimpl[$1, $2] = 1; impls[$1] = impls[$1] " " $2 }
    if (!(($1, $3) in seent)) { seent[$1, $3] = 1; ts[$1] = ts[$1] " " $3 }
    if (!(($1, $4) in seenp)) { seenp[$1, $4] = 1; ps[$1] = ps[$1] " " $4 }
    if ($1 == "hoststeal") hs[$4] = hs[$4] sprintf("%s %s %s", hs[$4] == "" ? "" : ",", $2, $5 < 0 ? "unknown" : sprintf("%.2f", $5))
    if ($1 ~ /^steal(nice)?[0-9.]+$/ && !($1 in isst)) { isst[$1] = 1; stl[++nst] = $1 }
    if ($1 == "policy") {
      split($4, pk, ":"); pkey = pk[1] SUBSEP $2 SUBSEP $3
      if (!(pkey in polseen)) { polseen[pkey] = 1; pol[++npol] = pkey }
      polv[pkey, pk[2]] = $5
    }
    rows[++nr] = $0 }
  # What the wait policy did during each row that it did anything in
  # ("policy" rows: src/core/policy.h abar__policy_tally)
  function policytab(   i, k, f) {
    if (npol == 0) return
    print "\n## policy: what the process-wide wait policy of abar did during each row (counts; rows where it did nothing are left out)"
    printf "%-10s %-18s %5s %8s %8s %10s %12s %7s\n", "scenario", "impl", "T", "signs", "unheard", "stretches", "ended-early", "unpaid"
    for (i = 1; i <= npol; i++) {
      k = pol[i]; split(k, f, SUBSEP)
      printf "%-10s %-18s %5s %8d %8d %10d %12d %7d\n", f[1], f[2], f[3], polv[k, "signs"], polv[k, "unheard"],
        polv[k, "stretches"], polv[k, "ended-early"], polv[k, "unpaid"]
    }
  }
  # The steal the machine itself showed while the rows of a table ran
  # (/proc/stat, CPUs-worth; each binary over its own stretch), under the title.
  function hsteal(s) {
    print "# steal the host showed while these rows ran (/proc/stat, CPUs):" (s in hs ? hs[s] : " not recorded")
  }
  # Under the emulated hypervisor: abar-default against the best row of any
  # kind (every rival, abar-spin, abar-park, pthread) and against abar-park;
  # the targets: <= 1.2x the best, <= 1.5x abar-park.
  function stealbest(s,   ni, nt, im, tt, i, j, k, b, bn, kd, kp, kg, line) {
    if (!(s in impls)) return
    ni = split(substr(impls[s], 2), im, " "); nt = split(substr(ts[s], 2), tt, " ")
    print "\n## " s ": abar-default against the best row of any kind and against abar-park (targets: <= 1.2, <= 1.5)"
    printf "%4s %12s %-18s %10s %7s %10s %7s %8s\n", "T", "abar-default", "best other row", "its ns", "ratio", "abar-park", "ratio", "stolen"
    for (j = 1; j <= nt; j++) {
      b = -1; bn = "-"
      for (i = 1; i <= ni; i++) {
        if (im[i] == "abar-default" || im[i] ~ /^(x-|pingpong)/) continue
        k = s SUBSEP im[i] SUBSEP tt[j] SUBSEP "-"
        if ((k in med) && (b < 0 || med[k] < b)) { b = med[k]; bn = im[i] }
      }
      kd = s SUBSEP "abar-default" SUBSEP tt[j] SUBSEP "-"; kp = s SUBSEP "abar-park" SUBSEP tt[j] SUBSEP "-"
      kg = "stealgot" SUBSEP "abar-default" SUBSEP tt[j] SUBSEP s
      if (!(kd in med) || b <= 0) continue
      printf "%4s %12.0f %-18s %10.0f %7.2f %10s %7s %8s\n", tt[j], med[kd], bn, b, med[kd] / b,
        (kp in med) ? sprintf("%.0f", med[kp]) : "-", (kp in med) ? sprintf("%.2f", med[kd] / med[kp]) : "-",
        (kg in med) ? sprintf("%.2f", med[kg]) : "-"
    }
  }
  # what the thieves really took during each steal row (CPUs-worth)
  function pivot2(s,   ni, nt, im, tt, i, j, line, k) {
    if (!(s in impls)) return
    ni = split(substr(impls[s], 2), im, " "); nt = split(substr(ts[s], 2), tt, " ")
    print "# " s ": CPUs the thieves took during each row"
    for (i = 1; i <= ni; i++) {
      line = sprintf("%-18s", im[i])
      for (j = 1; j <= nt; j++) { k = "stealgot" SUBSEP im[i] SUBSEP tt[j] SUBSEP s; line = line sprintf(" %9s", (k in med) ? sprintf("%.2f", med[k]) : "-") }
      print line
    }
  }
  function cell(k) { return (k in med) ? sprintf("%.0f%s", med[k], fl[k] ~ /lb/ ? "+" : "") : "-" }
  function pivot(s, title,   ni, nt, im, tt, i, j, line) {
    if (!(s in impls)) return
    ni = split(substr(impls[s], 2), im, " "); nt = split(substr(ts[s], 2), tt, " ")
    print "\n## " title
    hsteal(s)
    line = sprintf("%-18s", "impl \\ T"); for (j = 1; j <= nt; j++) line = line sprintf(" %9s", tt[j]); print line
    for (i = 1; i <= ni; i++) {
      line = sprintf("%-18s", im[i])
      for (j = 1; j <= nt; j++) line = line sprintf(" %9s", cell(s SUBSEP im[i] SUBSEP tt[j] SUBSEP "-"))
      print line
    }
  }
  # The rivals every comparison must have; one missing is named in the
  # title, so a table with a hole never passes for the full comparison.
  function best(s,   ni, nt, im, tt, i, j, k, b, bn, a, line, nr, rv, have, miss, kc) {
    if (!(s in impls)) return
    ni = split(substr(impls[s], 2), im, " "); nt = split(substr(ts[s], 2), tt, " ")
    nr = split("pthread std-barrier omp-gomp omp-llvm ck-centralized ck-combining ck-dissemination ck-tournament ck-mcs", rv, " ")
    for (i = 1; i <= ni; i++) have[im[i]] = 1
    miss = ""
    for (i = 1; i <= nr; i++) if (!(rv[i] in have)) miss = miss (miss == "" ? "" : ", ") rv[i]
    if (miss == "") print "\n## " s ": abar-default against the fastest rival (ratio < 1: abar faster); every rival present"
    else print "\n## " s ": abar-default against the fastest rival PRESENT -- RIVALS MISSING: " miss " (not the full comparison)"
    printf "%4s %12s %-18s %10s %7s %12s %9s\n", "T", "abar-default", "fastest rival", "rival ns", "ratio", "c11-central", "x floor"
    for (j = 1; j <= nt; j++) {
      b = -1; bn = "-"
      for (i = 1; i <= ni; i++) {
        if (im[i] ~ /^(abar|pingpong|c11|x-|pthread-)/) continue
        k = s SUBSEP im[i] SUBSEP tt[j] SUBSEP "-"
        if ((k in med) && (b < 0 || med[k] < b)) { b = med[k]; bn = im[i] }
      }
      k = s SUBSEP "abar-default" SUBSEP tt[j] SUBSEP "-"
      if (!(k in med) || b <= 0) continue
      kc = s SUBSEP "c11-central" SUBSEP tt[j] SUBSEP "-"
      if (kc in med) printf "%4s %12.0f %-18s %10.0f %7.2f %12.0f %9.2f\n", tt[j], med[k], bn, b, med[k] / b, med[kc], med[k] / med[kc]
      else printf "%4s %12.0f %-18s %10.0f %7.2f %12s %9s\n", tt[j], med[k], bn, b, med[k] / b, "-", "-"
    }
  }
  # abar under code not written for it, against abar_arrive_and_wait itself
  function dropin(s,   nt, tt, j, ka, kp, kd, kc, ks, line) {
    if (!(s in impls)) return
    if (!((s SUBSEP "pthread-abar" SUBSEP 2 SUBSEP "-") in med) && !((s SUBSEP "abar-cpp" SUBSEP 2 SUBSEP "-") in med)) {
      print "\n## " s ": drop-in rows missing (abar-bench-pthread + libabar-pthread.so, abar-cpp)"; return }
    nt = split(substr(ts[s], 2), tt, " ")
    print "\n## " s ": drop-in, against abar_arrive_and_wait (abar-default); ratio < 1: faster"
    printf "%4s %12s %13s %8s %12s %8s %10s %8s %12s %8s\n", "T", "abar-default", "pthread-abar", "ratio",
      "pthread-dyn", "gain", "abar-cpp", "ratio", "std-barrier", "gain"
    for (j = 1; j <= nt; j++) {
      ka = s SUBSEP "abar-default" SUBSEP tt[j] SUBSEP "-"; kp = s SUBSEP "pthread-abar" SUBSEP tt[j] SUBSEP "-"
      kd = s SUBSEP "pthread-dyn" SUBSEP tt[j] SUBSEP "-"; kc = s SUBSEP "abar-cpp" SUBSEP tt[j] SUBSEP "-"
      ks = s SUBSEP "std-barrier" SUBSEP tt[j] SUBSEP "-"
      if (!(ka in med)) continue
      printf "%4s %12.0f %13s %8s %12s %8s %10s %8s %12s %8s\n", tt[j], med[ka],
        (kp in med) ? sprintf("%.0f", med[kp]) : "-", (kp in med) ? sprintf("%.2f", med[kp] / med[ka]) : "-",
        (kd in med) ? sprintf("%.0f", med[kd]) : "-", (kd in med && kp in med) ? sprintf("%.1fx", med[kd] / med[kp]) : "-",
        (kc in med) ? sprintf("%.0f", med[kc]) : "-", (kc in med) ? sprintf("%.2f", med[kc] / med[ka]) : "-",
        (ks in med) ? sprintf("%.0f", med[ks]) : "-", (ks in med && kc in med) ? sprintf("%.1fx", med[ks] / med[kc]) : "-"
    }
  }
  function long(s, title,   i, f) {
    if (!(s in impls)) return
    print "\n## " title
    hsteal(s)
    printf "%-18s %4s %-18s %10s %10s %10s %s\n", "impl", "T", "param", "median", "min", "max", "flags"
    for (i = 1; i <= nr; i++) {
      split(rows[i], f, ",")
      if (f[1] == s) printf "%-18s %4s %-18s %10.0f %10.0f %10.0f %s\n", f[2], f[3], f[4], f[5], f[6], f[7], f[11]
    }
  }
  # The split target: with W >= 2x the latency L of the barrier, time per phase
  # <= W + 0.1 L.  W is taken as measured (the "work" rows: the same pinned
  # team running the work alone), not as calibrated on one idle thread.
  function fv(k) { return (k in med) ? sprintf("%.0f%s", med[k], fl[k] ~ /lb/ ? "+" : "") : "-" }
  function splitcheck(   s, ni, nt, np, nw, im, tt, pp, ws, i, j, q, pass, T, pre, kw, kws, kl, ks, kj, kx,
                         wa, L, x, tgt, v, lb, hs) {
    s = "split"
    if (!(s in impls)) return
    ni = split(substr(impls[s], 2), im, " "); nt = split(substr(ts[s], 2), tt, " ")
    np = split(substr(ps[s], 2), pp, " ")
    nw = 0
    for (q = 1; q <= np; q++) if (pp[q] ~ /^work:/ && substr(pp[q], 6) + 0 > 0) ws[++nw] = substr(pp[q], 6)
    if (nw == 0) return
    print "\n## split: target check (with W_actual >= 2 L: split <= W_actual + 0.1 L)"
    print "# W_actual: work:W, the W ns of work alone on the same team (same pinning, no barrier), thread 0 ns"
    print "#   per phase; W_slow: the same for the slowest thread; L: the joined:0 row of the impl (arrive_and_wait, no work);"
    print "#   exposed: split (joined where the impl has no split) - W_actual, the barrier cost the work did not hide;"
    print "#   target = W_actual + 0.1 L; 2L: yes where W_actual >= 2 L (the target applies); met* = met only"
    print "#   against W_slow; ? = a row hit its wall-time limit (+: a lower bound); W = 0 left out (L itself)"
    printf "%-18s %4s %6s %9s %9s %8s %9s %9s %8s %9s %4s %s\n", "impl", "T", "W", "W_actual", "W_slow", "L",
      "joined", "split", "exposed", "target", "2L", "verdict"
    for (pass = 1; pass <= 2; pass++) {
      if (pass == 2) print "# no split phase (joined only, for context):"
      for (i = 1; i <= ni; i++) {
        if (im[i] == "work") continue
        for (j = 1; j <= nt; j++) {
          T = tt[j]; pre = s SUBSEP im[i] SUBSEP T SUBSEP
          hs = 0
          for (q = 1; q <= nw; q++) if ((pre "split:" ws[q]) in med) hs = 1
          if ((pass == 1) != hs) continue
          kl = pre "joined:0"
          for (q = 1; q <= nw; q++) {
            kw = s SUBSEP "work" SUBSEP T SUBSEP "work:" ws[q]; kws = s SUBSEP "work" SUBSEP T SUBSEP "work-slowest:" ws[q]
            ks = pre "split:" ws[q]; kj = pre "joined:" ws[q]
            kx = hs ? ks : kj
            if (!(kw in med) || !(kl in med) || !(kx in med)) continue
            wa = med[kw]; L = med[kl]; x = med[kx] - wa; tgt = wa + 0.1 * L
            lb = (fl[kw] fl[kl] fl[kx]) ~ /lb/ ? "?" : ""
            if (!hs) v = "-"
            else if (med[ks] <= tgt) v = "met" lb
            else if ((kws in med) && med[ks] <= med[kws] + 0.1 * L) v = "met*" lb
            else v = "missed" lb
            printf "%-18s %4s %6s %9s %9s %8s %9s %9s %8.0f %9.0f %4s %s\n", im[i], T, ws[q], fv(kw), fv(kws), fv(kl),
              fv(kj), fv(ks), x, tgt, (wa >= 2 * L) ? "yes" : "no", v
          }
        }
      }
    }
  }
  END {
    long("floor", "floor: cache-line ping-pong between two pinned threads (ns)")
    pivot("lat", "lat: arrive_and_wait, ns per phase (median over rounds), T threads pinned")
    best("lat")
    dropin("lat")
    pivot("oversub", "oversub: ns per phase, T = 2x and 4x the CPUs, unpinned (+: hit the wall-time limit, a lower bound)")
    best("oversub")
    long("split", "split: ns per phase with W ns of work, joined (arrive_and_wait; work) vs split (arrive; work; wait); work: the work alone")
    splitcheck()
    long("completion", "completion: ns per phase with a completion (emul: barrier, thread 0 runs it, barrier)")
    long("cpuburn", "cpuburn: CPU ns (user+sys) burnt by a thread waiting 10 ms for a late arrival")
    long("jitter", "jitter: lat with one thread 100 us late every 256 phases, ns per phase (absorbed: lat + 390)")
    for (q = 1; q <= nst; q++) {
      pivot(stl[q], stl[q] ": lat, ns per phase, while " (stl[q] ~ /nice/ ? "nice -20 thieves take " substr(stl[q], 10) : "a host takes " substr(stl[q], 6)) " CPUs on average in 1-5 ms bursts, idle CPUs first")
      stealbest(stl[q])
      pivot2(stl[q])
    }
    policytab()
  }' "$1"
}
{
  echo "# abar-bench: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -srm), $(nproc) CPUs"
  grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/^/# /' || true
  echo "# args: ${args[*]:-(full)}"
  tables "$csv"
} | tee "$out/bench.txt"

# ---- plot --------------------------------------------------------------------
png=$out/bench.png
ncpu=$(awk -F, '$1 == "lat" && $3 + 0 > m { m = $3 + 0 } END { print m + 0 }' "$csv")
# experimental variants (x-*) stay out of the plot unless ABAR_BENCH_PLOT_VARIANTS=1
awk -F, -v d="$tmp" -v xv="${ABAR_BENCH_PLOT_VARIANTS:-0}" 'NR > 1 && ($1 == "lat" || $1 == "oversub") && $4 == "-" && (xv == 1 || $2 !~ /^x-/) {
    f = d "/" $1 "_" $2 ".dat"; print $3, $5, $6, $7 >> f }' "$csv"
# the picture: plot.py (matplotlib) where it can; gnuplot, plainer, otherwise
if command -v python3 >/dev/null 2>&1 && python3 -c 'import matplotlib' 2>/dev/null; then
  python3 "$here/plot.py" "$csv" "$png" && echo "plot: $png (matplotlib)" >&2
elif command -v gnuplot >/dev/null 2>&1; then
  {
    echo "set terminal pngcairo size 1400,640 noenhanced font ',10'"
    echo "set output '$png'"
    echo "set multiplot layout 1,2 title 'abar-bench: ns per phase (median, min-max bars), $ncpu CPUs'"
    for s in lat oversub; do
      if [ $s = lat ]; then echo "set title 'pinned, T = 1..CPUs'; set xtics 1"; else echo "set title 'oversubscribed, unpinned'; set xtics autofreq"; fi
      echo "set logscale y; set grid; set xlabel 'threads T'; set ylabel 'ns per phase'; set key outside right top font ',8'"
      plots=()
      for f in "$tmp"/${s}_*.dat; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .dat); name=${name#${s}_}
        case $name in
          abar-default) style="lw 4 lc rgb '#1f5fbf'" ;;
          abar-*) style="lw 2 lc rgb '#4fa3e0'" ;;
          *) style="lw 1 lc rgb '#a0a0a0'" ;;
        esac
        plots+=("'$f' using 1:2:3:4 with yerrorlines $style title '$name'")
      done
      if [ ${#plots[@]} -gt 0 ]; then (IFS=,; echo "plot ${plots[*]}"); fi
    done
    echo "unset multiplot"
  } >"$tmp/plot.gp"
  gnuplot "$tmp/plot.gp" 2>"$tmp/gp.err" && echo "plot: $png" >&2 || { cat "$tmp/gp.err" >&2; echo "plot failed" >&2; }
else
  echo "no gnuplot (apt-get install gnuplot-nox) and no matplotlib: no plot" >&2
fi
