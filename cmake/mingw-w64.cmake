# mingw-w64.cmake - a Windows (x86-64) build from Linux with Debian's
# gcc-mingw-w64 (its posix-threads compilers: winpthreads gives the pthread
# calls), whose tests run under Wine:
#   cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64.cmake
#   cmake --build build-win && ctest --test-dir build-win
# Wine runs without a display and without prompts: its prefix is made in
# the build folder (WINEPREFIX), its debug output is off (WINEDEBUG), and
# the programs are linked statically, so no DLL of the toolchain need be
# found at run time.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(ABAR_MINGW x86_64-w64-mingw32)
find_program(CMAKE_C_COMPILER NAMES ${ABAR_MINGW}-gcc-posix ${ABAR_MINGW}-gcc REQUIRED)
find_program(CMAKE_CXX_COMPILER NAMES ${ABAR_MINGW}-g++-posix ${ABAR_MINGW}-g++ REQUIRED)
find_program(CMAKE_RC_COMPILER NAMES ${ABAR_MINGW}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${ABAR_MINGW})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

# The model check and the fuzz run are host tools' business: the Linux
# suites run them.
set(ABAR_WITH_VERIFY OFF CACHE BOOL "Consider the model check and the fuzz run at all")

# The tests' runner: tests/wine_run.sh (WINEPREFIX in the build folder).
set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/../tests/wine_run.sh)
