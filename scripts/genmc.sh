#!/usr/bin/env bash
# genmc.sh - the core's memory orders checked on the real C code by GenMC,
# under RC11 (the C11 model) and IMM (the model that covers Arm and POWER).
#
#   scripts/genmc.sh build      build GenMC into the cache folder (below)
#   scripts/genmc.sh check      run the clients of model/genmc/clients.txt under RC11
#                               and IMM (-m rc11: one; -a: those marked slow too)
#   scripts/genmc.sh mutants    weaken each atomic of src/core one step, in a
#                               copy, and run the clients on every mutant
#   scripts/genmc.sh available  exit 0 if a GenMC binary is there (CI asks this)
#
# GenMC's code is not ours: it is built outside the tree, in
# $ABAR_GENMC_CACHE (default ~/.cache/abar-genmc): its source in src/ (put
# there by the caller, or cloned from $ABAR_GENMC_REPO at $ABAR_GENMC_REV),
# the binary in build/.  A `genmc` on PATH, or $GENMC, is used instead when
# set.  Release v0.10.3 builds with Debian 12's LLVM 15 and g++ 12 (the later
# ones ask for C++23).
#
# The clients include the unmodified src/core sources (model/genmc/shim.h
# says what stands in for the system calls), so they check the code as it is
# when they run.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD

CACHE=${ABAR_GENMC_CACHE:-$HOME/.cache/abar-genmc}
REV=${ABAR_GENMC_REV:-v0.10.3}
REPO=${ABAR_GENMC_REPO:-https://github.com/MPI-SWS/genmc}
LLVM=${ABAR_GENMC_LLVM:-15}

# The headers a client includes (genmc.h and GenMC's libc stand-ins).
genmc_include() {
    local d
    d=$(dirname "$1")
    for i in "$d/../src/include" "$d/../include/genmc" "$d/../include/genmc/include" "$CACHE/src/include"; do
        [ -f "$i/genmc.h" ] && { (cd "$i" && pwd); return 0; }
    done
    return 1
}

genmc_bin() {
    if [ -n "${GENMC:-}" ] && [ -x "$GENMC" ]; then echo "$GENMC"; return 0; fi
    if [ -x "$CACHE/build/genmc" ]; then echo "$CACHE/build/genmc"; return 0; fi
    command -v genmc 2>/dev/null
}

build() {
    # shellcheck source=scripts/apt_need.sh
    . "$ROOT/scripts/apt_need.sh"
    apt_need "llvm-$LLVM-dev" "clang-$LLVM" "libclang-$LLVM-dev" libffi-dev zlib1g-dev libedit-dev \
        autoconf automake make g++ git
    mkdir -p "$CACHE"
    if [ ! -f "$CACHE/src/configure.ac" ]; then
        git clone --depth 1 --branch "$REV" "$REPO" "$CACHE/src" || {
            echo "genmc: no source in $CACHE/src and the clone failed" >&2
            return 1
        }
    fi
    mkdir -p "$CACHE/build"
    local llvm_dir=/usr/lib/llvm-$LLVM
    (
        cd "$CACHE/src" || exit 1
        [ -x configure ] || autoreconf --install >/dev/null || exit 1
        cd "$CACHE/build" || exit 1
        if [ ! -f Makefile ]; then
            PATH=$llvm_dir/bin:$PATH "$CACHE/src/configure" --with-llvm="$llvm_dir" \
                --with-clang="$llvm_dir/bin/clang" --with-clangxx="$llvm_dir/bin/clang++" \
                CXX=g++ >configure.log 2>&1 || { tail -20 configure.log; exit 1; }
        fi
        nice -n 10 make -j"${ABAR_GENMC_JOBS:-2}" genmc >make.log 2>&1 || { tail -30 make.log; exit 1; }
    ) || return 1
    echo "genmc: built $("$CACHE/build/genmc" --version 2>&1 | head -1) in $CACHE/build"
}

case "${1:-check}" in
    build) build ;;
    available) [ -n "$(genmc_bin)" ] ;;
    check|mutants)
        what=$1
        shift
        GENMC=$(genmc_bin) || { echo "genmc: not found (scripts/genmc.sh build)" >&2; exit 2; }
        GENMC_INCLUDE=${GENMC_INCLUDE:-$(genmc_include "$GENMC")} || {
            echo "genmc: no genmc.h beside $GENMC (set GENMC_INCLUDE)" >&2
            exit 2
        }
        CLANG=${CLANG:-/usr/lib/llvm-$LLVM/bin/clang}
        OPT=${OPT:-/usr/lib/llvm-$LLVM/bin/opt}
        export GENMC GENMC_INCLUDE CLANG OPT
        [ "$what" = check ] && exec bash "$ROOT/model/genmc/run.sh" "$@"
        exec bash "$ROOT/model/genmc/mutants.sh" "$@" ;;
    *) sed -n '2,12p' "$0"; exit 2 ;;
esac
