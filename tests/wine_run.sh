#!/bin/sh
# wine_run.sh PROGRAM ARGS... - runs a Windows test program under Wine
# (the emulator cmake/mingw-w64.cmake names): no display, no prompts, no
# debug output, and a prefix of its own in the build folder (the nearest
# folder up from here with a CMakeCache.txt), made once (wineboot -i).
command -v wine >/dev/null || { echo "wine_run.sh: wine is not installed" >&2; exit 127; }
if [ -z "$WINEPREFIX" ]; then
  d=$PWD
  while [ "$d" != / ] && [ ! -f "$d/CMakeCache.txt" ]; do d=$(dirname "$d"); done
  [ "$d" = / ] && d=$PWD
  WINEPREFIX=$d/wineprefix
fi
export WINEPREFIX WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" DISPLAY=
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  mkdir -p "$WINEPREFIX"
  # one prefix-maker at a time (ctest -j)
  flock "$WINEPREFIX/.lock" sh -c '[ -f "$WINEPREFIX/system.reg" ] || wineboot -i >/dev/null 2>&1'
fi
exec wine "$@"
