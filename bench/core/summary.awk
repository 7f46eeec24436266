# summary.awk - abar against the fastest rival, one short table a scenario,
# from an abar-bench-all CSV (scripts/demo.sh prints it):
#
#   awk -F, -f bench/core/summary.awk DIR/bench.csv
#
# A rival is every row that is not abar itself (abar-*), a floor (pingpong,
# c11-*), an experimental variant (x-*), a drop-in row (pthread-*) or the
# split scenario's work alone.  ratio = abar-default / best rival: below 1,
# abar is faster.  With many CPUs the lat rows are thinned to T = 1..4, the
# powers of two and the largest T.
BEGIN { FS = "," }
NR == 1 { next }
{
    k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
    med[k] = $5; lb[k] = ($11 ~ /lb/)
    if (!(($1, $3) in seent)) { seent[$1, $3] = 1; nt[$1]++; ts[$1, nt[$1]] = $3 + 0 }
    if (!(($1, $4) in seenp)) { seenp[$1, $4] = 1; np[$1]++; ps[$1, np[$1]] = $4 }
    if ($2 !~ /^(abar|pingpong|c11|x-|pthread-|work$)/ && !(($1, $2) in seenr)) {
        seenr[$1, $2] = 1; nr[$1]++; rv[$1, nr[$1]] = $2 }
    if ($3 + 0 > maxt) maxt = $3 + 0
}
function fmt(v) { return v >= 100000 ? sprintf("%.0fk", v / 1000) : sprintf("%.0f", v) }
# fastest rival of scenario s at T t for parameter p (and, for split, also
# the rival's joined form): sets bname, bval
function fastest(s, t, p, alt,   i, r, k, v) {
    bname = "-"; bval = -1
    for (i = 1; i <= nr[s]; i++) {
        r = rv[s, i]
        k = s SUBSEP r SUBSEP t SUBSEP p
        if (k in med) { v = med[k]; if (bval < 0 || v < bval) { bval = v; bname = r } }
        if (alt == "") continue
        k = s SUBSEP r SUBSEP t SUBSEP alt
        if (k in med) { v = med[k]; if (bval < 0 || v < bval) { bval = v; bname = r } }
    }
}
function row(label, a, alb) {
    if (bval <= 0) { printf "  %-8s %9s%s  %-18s\n", label, fmt(a), alb ? "+" : " ", "(no rival)"; return }
    printf "  %-8s %9s%s  %-18s %9s  %6.2f\n", label, fmt(a), alb ? "+" : " ", bname, fmt(bval), a / bval
}
function head(title, col) {
    print ""
    print title
    printf "  %-8s %10s  %-18s %9s  %6s\n", col, "abar", "best rival", "rival", "ratio"
}
function show_t(t) { return t <= 4 || t == maxt || and_pow2(t) }
function and_pow2(t) { while (t > 1 && t % 2 == 0) t /= 2; return t == 1 }
function byT(s, title,   j, t, k, p) {
    if (!(s in nt)) return
    p = np[s] == 1 ? ps[s, 1] : "-"
    head(title, "T")
    for (j = 1; j <= nt[s]; j++) {
        t = ts[s, j]
        if (s == "lat" && !show_t(t)) continue
        k = s SUBSEP "abar-default" SUBSEP t SUBSEP p
        if (!(k in med)) continue
        fastest(s, t, p, "")
        row(t, med[k], lb[k])
    }
}
function byP(s, title, prefix, alt,   j, t, q, p, k, a) {
    if (!(s in np)) return
    head(title, prefix == "split:" ? "W ns" : "")
    for (j = 1; j <= nt[s]; j++) for (q = 1; q <= np[s]; q++) {
        t = ts[s, j]; p = ps[s, q]
        if (prefix != "" && index(p, prefix) != 1) continue
        k = s SUBSEP "abar-default" SUBSEP t SUBSEP p
        if (!(k in med)) continue
        a = (prefix == "split:") ? substr(p, 7) : p
        fastest(s, t, p, prefix == "split:" ? "joined:" a : "")
        row(a (nt[s] > 1 ? " T=" t : ""), med[k], lb[k])
    }
}
END {
    byT("lat", "lat: arrive_and_wait, ns a phase, T threads pinned")
    byT("oversub", "oversub: ns a phase, T = 2x and 4x the CPUs, unpinned")
    byP("split", "split: arrive, W ns of work, wait (rivals: their best of split and joined)", "split:")
    byP("completion", "completion: ns a phase with a completion function", "")
    byT("cpuburn", "cpuburn: CPU ns burnt while waiting 10 ms for a late thread")
    byT("jitter", "jitter: ns a phase, one thread 100 us late every 256 phases")
    print ""
    print "ratio = abar / best rival (the fastest, or for cpuburn the thriftiest): below 1, abar is faster (+: a lower bound)."
}
