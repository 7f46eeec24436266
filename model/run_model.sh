#!/usr/bin/env bash
# run_model.sh - check the Promela model of abar (model/abar.pml) with Spin.
#
#   model/run_model.sh [quick|full] [workdir]
#
# quick (the CTest test `model`, a few minutes): the configurations below,
#   exhaustively (with the AW_REGISTERED variant: arrive_and_wait's arrival
#   of 4d5ff95), each must report "errors: 0" and a complete search; then
#   the findings F1, F2, F4 (old code), each planted bug (MUTANT=1,2,3,5,6,7,8,11,12,13;
#   the arrival tree's 15,16,17; the pair's CAS 8, 18, 19, 20, 23, 24; 21, 22, 25;
#   and the anonymous-arrival configurations, EXTRA)
#   and the unsafe usage SPLIT_FINAL=1 must be caught (errors > 0), so the
#   check is known to be able to fail.  Then abar_mpi's flags engine
#   (model/mpi_flags.pml): four configurations (one of them destroy racing
#   an arrival), five planted bugs.  Then liveness (P6): a non-progress
#   cycle search under weak fairness (pan -DNP, -l -f) on three
#   configurations must find no cycle, and must find the planted livelocks
#   (MUTANT=9,10).
# full: adds 3 workers x 3 phases with the canceller (hundreds of millions
#   of states, several GB: raise ABAR_MODEL_MEMLIM; see docs/reliability.md
#   for the figures), the variant without cancel's unconditional wake, and
#   the liveness check on two more configurations.
#
# The checks run side by side, ABAR_MODEL_JOBS at a time (default: the
# CPUs), each in its own directory; their reports are printed in the order
# below once all have ended.
#
# Needs spin (Debian: apt-get install spin) and a C compiler (CC, default cc).
# Exits non-zero, with a message, if either is missing: never skips as a pass.
set -euo pipefail
mode=${1:-quick}
here=$(cd "$(dirname "$0")" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
CC=${CC:-cc}
MEMLIM=${ABAR_MODEL_MEMLIM:-6000}   # MB for the state store

if ! command -v spin >/dev/null 2>&1; then
  echo "FAIL: spin not found; install it (Debian: apt-get install spin)" >&2
  exit 2
fi
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "FAIL: C compiler '$CC' not found" >&2
  exit 2
fi

total_states=0
live_states=0
fail=0
JOBS=${ABAR_MODEL_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
results=$work/results
rm -rf "$results"; mkdir -p "$results"
nspawned=0

# spawn CMD ARGS...: runs one check (a function below) in the background,
# at most $JOBS at a time; its report goes to $results/NNN.txt and its
# verdict and state counts to $results/NNN.st (collect, at the end, reads
# them in order).
spawn() {
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  nspawned=$((nspawned + 1))
  local out
  out=$results/$(printf '%03d' "$nspawned")
  ( fail=0 total_states=0 live_states=0
    "$@"
    echo "$fail $total_states $live_states" >"$out.st" ) >"$out.txt" 2>&1 &
}

# collect: waits for every check, prints the reports in order and adds up
# the verdicts; a check that left no verdict (killed, crashed) fails.
collect() {
  wait || true
  local i f t l
  for ((i = 1; i <= nspawned; i++)); do
    local out
    out=$results/$(printf '%03d' "$i")
    cat "$out.txt"
    if read -r f t l <"$out.st" 2>/dev/null; then
      [ "$f" = 0 ] || fail=1
      total_states=$((total_states + t))
      live_states=$((live_states + l))
    else
      echo "FAIL check $i ($out.txt) left no verdict"
      fail=1
    fi
  done
}

# run_pan NAME CC-DEFINES PAN-FLAGS SPIN-DEFINES...: generates, builds and runs
# pan in $work/NAME; sets d, log, errs, states, incomplete (1: the search was
# cut short) and secs.  Returns 1, having said FAIL, if pan could not be built.
run_pan() {
  local name=$1 ccdefs=$2 panflags=$3; shift 3
  local pml=${PML:-abar.pml}
  d=$work/$name
  rm -rf "$d"; mkdir -p "$d"; cp "$here/$pml" "$d/"
  (cd "$d" && spin -a "$@" "$pml" >spin.log 2>&1) || { echo "FAIL $name: spin -a"; cat "$d/spin.log"; fail=1; return 1; }
  # $ccdefs and $panflags are word lists: unquoted on purpose
  # state compression: COLLAPSE (exact), or PAN_COMPRESS=-DHC4 (hash
  # compaction: far less memory, may in rare cases miss a state)
  # ${OPT}: -O2 for searches that must end; -O0 for planted bugs, which
  # stop at their first error (pan.c compiles in 1 s at -O0, 8 at -O2)
  (cd "$d" && "$CC" -w ${OPT:--O2} $ccdefs ${PAN_COMPRESS:--DCOLLAPSE} -DMEMLIM="$MEMLIM" -o pan pan.c >cc.log 2>&1) ||
    { echo "FAIL $name: compiling pan"; cat "$d/cc.log"; fail=1; return 1; }
  local t0=$SECONDS
  # -m: search depth; -c1: stop at the first error; -n: no unreached-code list
  (cd "$d" && ./pan -m4000000 $panflags -c1 -n >pan.log 2>&1) || true
  secs=$((SECONDS - t0))
  log=$d/pan.log
  errs=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | tail -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$log" | tail -1)
  states=$(printf '%.0f' "${states:-0}")
  incomplete=""
  if grep -qE 'max search depth too small|reached -DMEMLIM bound|out of memory' "$log"; then incomplete=1; fi
}

# check NAME EXPECT SPIN-DEFINES...   EXPECT: ok (no error, full search) or bug
check() { spawn check_one "$@"; }
check_one() {
  local name=$1 expect=$2; shift 2
  [ "$expect" = bug ] && OPT=${OPT:--O0}
  run_pan "$name" -DSAFETY "" "$@" || return 0
  if [ "$expect" = ok ]; then
    if [ "${errs:-x}" = 0 ] && [ -z "$incomplete" ]; then
      echo "ok   $name: $states states, no error ($secs s) [$*]"
      total_states=$((total_states + states))
    else
      echo "FAIL $name: errors=${errs:-?} incomplete=${incomplete:-0} [$*]"
      grep -E 'assertion violated|invalid end state|error|MEMLIM|depth' "$log" | head -5
      [ -f "$d/${PML:-abar.pml}.trail" ] && echo "  trail: (cd $d && spin -t -p $* ${PML:-abar.pml})"
      fail=1
    fi
  else
    if [ -n "${errs:-}" ] && [ "$errs" -gt 0 ]; then
      echo "ok   $name: caught ($(grep -m1 -oE 'assertion violated.*|invalid end state.*' "$log")) [$*]"
    else
      echo "FAIL $name: the planted bug was NOT caught [$*]"
      fail=1
    fi
  fi
}

# The C as it is (every configuration must pass).
check fid-3x1          ok -DN=3 -DNPH=1 -DOBSERVER=0 -DCANCELLER=0
check fid-2x2-cancel   ok -DN=2 -DNPH=2 -DOBSERVER=0
check fid-2x2-pshared  ok -DN=2 -DNPH=2 -DOBSERVER=0 -DPSHARED=1
# The snapshot, proven above (P2), taken as one step: more phases, observer,
# signals (spurious futex returns).
check atom-2x3-cancel   ok -DN=2 -DNPH=3 -DOBSERVER=0 -DATOMIC_SNAPSHOT=1
check atom-2x2-signals  ok -DN=2 -DNPH=2 -DOBSERVER=0 -DSIGNALS=1 -DATOMIC_SNAPSHOT=1
# A barrier of two without a completion function: each single arrival one
# add of HALF, the second's carry opening the next phase (ABAR__TICKET);
# with drops (a phase that expects one, completed the general way) and
# with drops and cancel (refused adds whose carry moves the phase bits).
check fid-2x2-pair      ok -DN=2 -DNPH=2 -DOBSERVER=0 -DPAIR=1
check pair-2x2-drops    ok -DN=2 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DFULL_MENU=1 -DPAIR=1
check atom-pair-2x2-drops-cancel ok -DN=2 -DNPH=2 -DOBSERVER=0 -DFULL_MENU=1 -DPAIR=1 -DATOMIC_SNAPSHOT=1
check atom-pair-2x2-drops-observer ok -DN=2 -DNPH=2 -DCANCELLER=0 -DFULL_MENU=1 -DPAIR=1 -DATOMIC_SNAPSHOT=1
check atom-2x3-pair     ok -DN=2 -DNPH=3 -DOBSERVER=0 -DATOMIC_SNAPSHOT=1 -DPAIR=1
check atom-2x1-observer-pair ok -DN=2 -DNPH=1 -DATOMIC_SNAPSHOT=1 -DPAIR=1
# arrive_and_wait's registered arrival of 4d5ff95 (the RMW first, then the
# read of `phase`), reverted by 074e8fd as slower: kept checked.
check variant-aw-registered-3x1      ok -DN=3 -DNPH=1 -DOBSERVER=0 -DCANCELLER=0 -DAW_REGISTERED=1
check variant-aw-registered-2x2      ok -DN=2 -DNPH=2 -DOBSERVER=0 -DAW_REGISTERED=1
# The arrival tree (TREE=1, tree.c): leaves of quota 2 and 1; across phases
# with a canceller; drops that leave a leaf without units; arrive_n's locks
# (NARR=2, worker 1 arrives 2 at once), and the same arrive_n on the flat
# barrier.
check tree-3x1          ok -DN=3 -DNPH=1 -DOBSERVER=0 -DCANCELLER=0 -DTREE=1
check tree-2x2-cancel   ok -DN=2 -DNPH=2 -DOBSERVER=0 -DTREE=1
check tree-2x2-drops    ok -DN=2 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DFULL_MENU=1 -DTREE=1
check tree-2x2-arrive-n ok -DN=2 -DNPH=2 -DOBSERVER=0 -DNARR=2 -DTREE=1
check flat-2x2-arrive-n ok -DN=2 -DNPH=2 -DOBSERVER=0 -DNARR=2
if [ "$mode" = full ]; then
  # the observer on the general path (36 M states, a minute; the quick run
  # has it on the pair's path and with drops)
  check atom-2x1-observer ok -DN=2 -DNPH=1 -DATOMIC_SNAPSHOT=1
  # drops across phases with leaves of two units; an arrive_n that fills no
  # leaf while it holds a full one locked (quotas 3 and 2: mutant 14's case)
  check tree-3x2-drops    ok -DN=3 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DATOMIC_SNAPSHOT=1 -DTREE=1
  # (exhaustively it outgrows 17 GB: hash compaction, about 14 GB and 6 min)
  PAN_COMPRESS=-DHC4 check tree-4x1-arrive-n ok -DN=4 -DNPH=1 -DOBSERVER=0 -DCANCELLER=0 -DATOMIC_SNAPSHOT=1 -DNARR=2 -DTREE=1
  check atom-3x3-cancel   ok -DN=3 -DNPH=3 -DOBSERVER=0 -DATOMIC_SNAPSHOT=1
  check atom-3x2-observer ok -DN=3 -DNPH=2 -DATOMIC_SNAPSHOT=1
  check fid-3x2           ok -DN=3 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0
  check fid-2x2-observer  ok -DN=2 -DNPH=2
  # Since 177c88b the park rule (F4's fix) alone keeps cancel's sleepers
  # awake: abar_cancel's unconditional wake (F2's fix) is defence in depth.
  check variant-cancel-wakes-if-parked ok -DN=2 -DNPH=2 -DOBSERVER=0 -DFIX_CANCEL_WAKE=0
fi

# The old code (findings F1, F2, F4, docs/reliability.md): the check must
# still find each.  F1, F2: before 8fb3cd8 (F2 with the park rule of then,
# which 177c88b changed: with today's rule F2's trail no longer exists).
# F4: 177c88b's futex protocol with the park rule of before it.
check finding-F1-arrival-reads-after-rmw bug -DFIX_ARRIVAL_PHASE=0 -DN=3 -DNPH=1 -DOBSERVER=0 -DCANCELLER=0
check finding-F2-cancel-lost-wakeup      bug -DFIX_CANCEL_WAKE=0 -DFIX_CANCEL_PARK=0 -DN=2 -DNPH=2 -DOBSERVER=0
check finding-F4-park-on-cancel-transient bug -DFIX_CANCEL_PARK=0 -DN=2 -DNPH=2 -DOBSERVER=0

# The check must be able to fail: planted bugs.
M="-DN=2 -DNPH=2 -DOBSERVER=0"
check mutant1-release-before-cas    bug $M -DMUTANT=1
check mutant2-no-parked-flag        bug $M -DMUTANT=2
check mutant3-completer-never-wakes bug $M -DMUTANT=3
check mutant5-cancel-no-futex-bit   bug $M -DMUTANT=5
check mutant6-register-after-arrive bug $M -DMUTANT=6
check mutant7-parked-no-futex-bump  bug $M -DMUTANT=7
check mutant8-pair-carry-ignores-parked bug $M -DMUTANT=8 -DPAIR=1
# Anonymous arrivals (EXTRA: a thread that only arrives, singly or two at
# once, besides workers that arrive and wait with a deadline, or only
# arrive): every count and token still holds; and the defects they exposed.
check anon-pair-2x2     ok -DN=2 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DPAIR=1 -DEXTRA=2
check anon-flat-2x2     ok -DN=2 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DEXTRA=2
check mutant20-pair-completes-out-of-order bug -DN=2 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DPAIR=1 -DEXTRA=2 -DMUTANT=20
check mutant23-pair-add-taken-back       bug -DN=2 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DPAIR=1 -DEXTRA=2 -DMUTANT=23
check mutant22-completer-phase-from-word bug -DN=2 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DEXTRA=2 -DMUTANT=22
check mutant21-destroy-ignores-cancel    bug -DN=2 -DNPH=2 -DOBSERVER=0 -DMUTANT=21
check mutant25-completion-before-order   bug -DN=2 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DEXTRA=2 -DMUTANT=25
# a barrier of one at T = 1 (abar__one_carry, unregistered): the drop
# configurations above reach it; its planted bug: a CAS blind to PARKED
OPT=-O2 check mutant24-one-carry-ignores-parked  bug -DN=2 -DNPH=2 -DCANCELLER=0 -DFULL_MENU=1 -DPAIR=1 -DATOMIC_SNAPSHOT=1 -DMUTANT=24
check mutant18-pair-last-add-taken-for-carry bug $M -DCANCELLER=0 -DFULL_MENU=1 -DPAIR=1 -DMUTANT=18
check mutant19-one-second-add-ignores-parked bug -DN=2 -DNPH=2 -DCANCELLER=0 -DFULL_MENU=1 -DPAIR=1 -DATOMIC_SNAPSHOT=1 -DMUTANT=19
check mutant11-registered-before-formula bug $M -DMUTANT=11 -DAW_REGISTERED=1
check mutant12-aw-released-off-by-one   bug $M -DMUTANT=12
check mutant13-aw-leaves-before-check   bug $M -DMUTANT=13
# (mutant 14, arrive_n unlocking its partly filled leaves first, broke only
# P5: a destroy under the late unlock.  Every arrival now registers for its
# call, so destroy says EBUSY until it returns: the search completes with no
# error, and the order is kept for clarity, not safety.)
check mutant15-tree-forward-never-undone bug $M -DTREE=1 -DMUTANT=15
check mutant16-tree-ignores-lock        bug $M -DNARR=2 -DTREE=1 -DMUTANT=16
check mutant17-tree-zero-quota-leaf     bug $M -DCANCELLER=0 -DFULL_MENU=1 -DTREE=1 -DMUTANT=17
check split-final-wait-vs-destroy   bug -DN=2 -DNPH=1 -DOBSERVER=0 -DCANCELLER=0 -DSPLIT_FINAL=1

# abar_mpi's flags engine (model/mpi_flags.pml, src/mpi/engine_flags.c):
# its park and wake protocol, with a cancel; and its planted bugs.
PML=mpi_flags.pml check flags-2x3        ok -DR=2 -DPH=3
PML=mpi_flags.pml check flags-3x2        ok -DR=3 -DPH=2
PML=mpi_flags.pml check flags-2x3-cancel ok -DR=2 -DPH=3 -DCANCEL=1
PML=mpi_flags.pml check flags-mutant1-look-before-store bug -DR=2 -DPH=2 -DMUTANT=1
PML=mpi_flags.pml check flags-mutant2-word-read-late    bug -DR=2 -DPH=2 -DMUTANT=2
PML=mpi_flags.pml check flags-mutant3-cancel-no-bump    bug -DR=2 -DPH=2 -DCANCEL=1 -DMUTANT=3
# destroy racing an arrival of the same rank (DESTROY), and its planted bugs
PML=mpi_flags.pml check flags-destroy            ok -DR=2 -DPH=1 -DDESTROY=1
PML=mpi_flags.pml check flags-mutant4-destroy-no-wait   bug -DR=2 -DPH=1 -DDESTROY=1 -DMUTANT=4
PML=mpi_flags.pml check flags-mutant5-published-first   bug -DR=2 -DPH=1 -DDESTROY=1 -DMUTANT=5

# Liveness (P6): every weakly fair execution terminates, i.e. no cycle in
# which the system runs for ever (a CAS retry loop, a waiter that yields or
# spins without end) while every process that stays enabled gets its turn.
# The model has no progress labels: every real progress step changes a
# monotone variable (an arrival, a phase, a return), so no cycle passes
# through one, and every cycle is a non-progress cycle.  -DNP turns off the
# end-state check; the safety runs above cover deadlocks.
# live NAME EXPECT SPIN-DEFINES...   EXPECT: ok (no cycle, full search) or bug
live() { spawn live_one "$@"; }
live_one() {
  local name=live-$1 expect=$2; shift 2
  [ "$expect" = bug ] && OPT=${OPT:--O0}
  # -l: non-progress cycles; -f: weak fairness
  run_pan "$name" -DNP "-l -f" "$@" || return 0
  grep -q 'fairness enabled' "$log" || incomplete=1
  if [ "$expect" = ok ]; then
    if [ "${errs:-x}" = 0 ] && [ -z "$incomplete" ]; then
      echo "ok   $name: $states states, no non-progress cycle ($secs s) [$*]"
      live_states=$((live_states + states))
    else
      echo "FAIL $name: errors=${errs:-?} incomplete=${incomplete:-0} [$*]"
      grep -E 'non-progress cycle \(|error|MEMLIM|depth' "$log" | head -5
      [ -f "$d/${PML:-abar.pml}.trail" ] && echo "  trail: (cd $d && spin -t -p $* ${PML:-abar.pml})"
      fail=1
    fi
  else
    if [ -n "${errs:-}" ] && [ "$errs" -gt 0 ] && grep -q 'non-progress cycle (' "$log"; then
      echo "ok   $name: caught (non-progress cycle, $states states) [$*]"
    else
      echo "FAIL $name: the planted livelock was NOT caught [$*]"
      fail=1
    fi
  fi
}

live fid-2x2-cancel  ok -DN=2 -DNPH=2 -DOBSERVER=0
live fid-2x2-pair    ok -DN=2 -DNPH=2 -DOBSERVER=0 -DPAIR=1
live pair-2x2-drops-cancel ok -DN=2 -DNPH=2 -DOBSERVER=0 -DFULL_MENU=1 -DPAIR=1
live atom-2x3-cancel ok -DN=2 -DNPH=3 -DOBSERVER=0 -DATOMIC_SNAPSHOT=1
live tree-2x2-arrive-n ok -DN=2 -DNPH=2 -DOBSERVER=0 -DNARR=2 -DTREE=1
live tree-2x2-drops  ok -DN=2 -DNPH=2 -DOBSERVER=0 -DCANCELLER=0 -DFULL_MENU=1 -DTREE=1
if [ "$mode" = full ]; then
  live fid-3x1          ok -DN=3 -DNPH=1 -DOBSERVER=0 -DCANCELLER=0
  live fid-2x2-pshared  ok -DN=2 -DNPH=2 -DOBSERVER=0 -DPSHARED=1
fi
# Planted livelocks: 9 a refused arrival is never undone (on a cancelled
# barrier the count reads "completing" for ever: a waiter's look never
# settles); 10 the completer's futex CAS retries with a stale value after
# cancel's fetch_or (it loops for ever, `phase` is never published, its
# waiter yields on EBUSY for ever; the safety check finds no error).
live mutant9-refusal-never-undone   bug $M -DMUTANT=9
live mutant10-futex-cas-stale-retry bug $M -DMUTANT=10

collect
echo "model: $total_states states explored in the passing configurations"
echo "model: liveness: $live_states states explored (weak fairness) in the passing configurations"
[ "$fail" = 0 ] && echo "model: PASS" || echo "model: FAIL"
exit "$fail"
