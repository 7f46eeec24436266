# AbarProbes.cmake - every optional part of the build is decided here, by a
# probe that compiles AND links a small program with the exact tool and flags
# the part will use.  A part left out says so in one configure line:
#   abar: left out: WHAT (WHY; apt-get install PACKAGE)
#
# Each part has a three-way cache option:
#   AUTO (default)  built when its probe passes, else left out with that line
#   ON              required: a failing probe stops the configure
#   OFF             left out without probing
# After abar_settle(), ABAR_WITH_<PART> is a normal variable ON or OFF (it
# shadows the cache entry, so subdirectories test it with a plain if()).
include_guard(GLOBAL)
include(CheckCSourceCompiles)

set(ABAR_PROBE_DIR ${PROJECT_BINARY_DIR}/probes)
file(MAKE_DIRECTORY ${ABAR_PROBE_DIR})

# abar_part(VAR DOC): declares the AUTO/ON/OFF option VAR.
function(abar_part var doc)
  set(${var} AUTO CACHE STRING "${doc}: AUTO (when its probe passes), ON (required) or OFF")
  set_property(CACHE ${var} PROPERTY STRINGS AUTO ON OFF)
endfunction()

# abar_settle(VAR OK WHAT WHY PACKAGE): turns the option and the probe's verdict
# into ON/OFF in the caller's scope, printing the left-out line (or stopping
# the configure when the part was required).
function(abar_settle var ok what why pkg)
  string(TOUPPER "${${var}}" want)
  if(want MATCHES "^(OFF|NO|FALSE|0|N)$")
    set(${var} OFF PARENT_SCOPE)
    message(STATUS "abar: left out: ${what} (${var}=OFF)")
    return()
  endif()
  if(ok)
    set(${var} ON PARENT_SCOPE)
    return()
  endif()
  set(line "${what} (${why}; apt-get install ${pkg})")
  if(want MATCHES "^(ON|YES|TRUE|1|Y)$")
    message(FATAL_ERROR "abar: ${var}=ON but ${line}")
  endif()
  set(${var} OFF PARENT_SCOPE)
  abar_left_out("${line}")
endfunction()

# abar_left_out(LINE): the one configure line for a part (or a rival) left out.
function(abar_left_out line)
  message(STATUS "abar: left out: ${line}")
endfunction()

# abar_try_tool(OUT NAME CMD...): runs a probe command in ABAR_PROBE_DIR;
# OUT is TRUE when it exits 0.  Its output goes to probes/NAME.log.
function(abar_try_tool out name)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${ABAR_PROBE_DIR}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  file(WRITE ${ABAR_PROBE_DIR}/${name}.log "${ARGN}\n${log}")
  if(rc EQUAL 0)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# ---- sanitizers (ABAR_SANITIZE): asked for by name, so required ---------------
# ABAR_SANITIZE_FLAGS: what every C/C++ compile and link then gets.
function(abar_probe_sanitizer)
  if(ABAR_SANITIZE STREQUAL "")
    return()
  elseif(ABAR_SANITIZE STREQUAL "thread")
    set(flags -fsanitize=thread -fno-omit-frame-pointer)
    set(link -fsanitize=thread)
    set(pkg "libtsan2 for gcc, libclang-rt-dev for clang")
  elseif(ABAR_SANITIZE STREQUAL "address")
    # float-cast-overflow: in clang's `undefined`, not in gcc's
    set(flags -fsanitize=address,undefined,float-cast-overflow
              -fno-sanitize-recover=undefined,float-cast-overflow -fno-omit-frame-pointer)
    # Uninitialised locals get a pattern, not whatever the stack held, so a
    # read of one fails the same way every run (a `bool` read before it is
    # written reads true).  gcc 12 and clang 8 on.
    include(CheckCCompilerFlag)
    check_c_compiler_flag(-ftrivial-auto-var-init=pattern ABAR_HAVE_AUTO_VAR_INIT)
    if(ABAR_HAVE_AUTO_VAR_INIT)
      list(APPEND flags -ftrivial-auto-var-init=pattern)
    endif()
    set(link -fsanitize=address,undefined,float-cast-overflow)
    set(pkg "libasan8 libubsan1 for gcc, libclang-rt-dev for clang")
  else()
    message(FATAL_ERROR "abar: ABAR_SANITIZE is thread, address or empty, not '${ABAR_SANITIZE}'")
  endif()
  string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${flags}")
  set(CMAKE_REQUIRED_LINK_OPTIONS ${link} -pthread)
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles("#include <pthread.h>
static void *f(void *a) { return a; }
int main(void) { pthread_t t; pthread_create(&t, 0, f, 0); return pthread_join(t, 0); }"
    ABAR_SANITIZE_LINKS_${ABAR_SANITIZE})
  if(NOT ABAR_SANITIZE_LINKS_${ABAR_SANITIZE})
    message(FATAL_ERROR "abar: ABAR_SANITIZE=${ABAR_SANITIZE} but ${CMAKE_C_COMPILER} cannot link "
                        "'${flags}' (apt-get install ${pkg})")
  endif()
  set(ABAR_SANITIZE_FLAGS ${flags} PARENT_SCOPE)
  set(ABAR_SANITIZE_LINK ${link} PARENT_SCOPE)
endfunction()

# ---- the libFuzzer harness (fuzz/) ----------------------------------------------
# Built with clang whatever the configured compiler, with these flags.
set(ABAR_FUZZ_FLAGS -std=c11 -g -O1 -Wall -Wextra -Werror
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
function(abar_probe_fuzz)
  set(ok FALSE)
  set(why "")
  string(TOUPPER "${ABAR_WITH_FUZZ}" want)
  if(NOT want STREQUAL "OFF")
    find_program(ABAR_CLANG NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
    if(NOT ABAR_CLANG)
      set(why "no clang found")
    else()
      file(WRITE ${ABAR_PROBE_DIR}/fuzz_probe.c "#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return size > 0 && data[0] == 1; }\n")
      abar_try_tool(ok fuzz ${ABAR_CLANG} ${ABAR_FUZZ_FLAGS} fuzz_probe.c -o fuzz_probe -lpthread)
      set(why "${ABAR_CLANG} cannot link -fsanitize=fuzzer,address,undefined: see ${ABAR_PROBE_DIR}/fuzz.log")
    endif()
  endif()
  abar_settle(ABAR_WITH_FUZZ "${ok}" "the libFuzzer harness fuzz_abar and its test fuzz_short"
              "${why}" "clang libclang-rt-dev (libclang-rt-N-dev for clang-N)")
  set(ABAR_WITH_FUZZ ${ABAR_WITH_FUZZ} PARENT_SCOPE)
endfunction()

# ---- the model check (model/: spin generates a C verifier, pan) -------------------
function(abar_probe_model)
  set(ok FALSE)
  set(why "")
  string(TOUPPER "${ABAR_WITH_MODEL}" want)
  if(NOT want STREQUAL "OFF")
    find_program(ABAR_SPIN spin)
    if(NOT ABAR_SPIN)
      set(why "spin not found")
    else()
      # The smallest model, through the same steps as model/run_model.sh:
      # spin -a, then the configured C compiler builds pan.
      set(d ${ABAR_PROBE_DIR}/model)
      file(MAKE_DIRECTORY ${d})
      file(WRITE ${d}/probe.pml "active proctype p() { byte x = 1; assert(x == 1) }\n")
      execute_process(COMMAND ${ABAR_SPIN} -a probe.pml WORKING_DIRECTORY ${d}
                      RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        abar_try_tool(ok model ${CMAKE_C_COMPILER} -w -O2 -DCOLLAPSE -o model/pan model/pan.c)
        set(why "${CMAKE_C_COMPILER} cannot build spin's verifier: see ${ABAR_PROBE_DIR}/model.log")
      else()
        set(why "${ABAR_SPIN} -a fails on a one-line model")
      endif()
    endif()
  endif()
  abar_settle(ABAR_WITH_MODEL "${ok}" "the model check (test `model`)" "${why}" "spin")
  set(ABAR_WITH_MODEL ${ABAR_WITH_MODEL} PARENT_SCOPE)
endfunction()

# ---- the MPI layer (mpi/) ---------------------------------------------------------
function(abar_probe_mpi)
  set(ok FALSE)
  set(why "")
  string(TOUPPER "${ABAR_WITH_MPI}" want)
  if(NOT want STREQUAL "OFF")
    find_package(MPI QUIET COMPONENTS C)
    if(NOT MPI_C_FOUND)
      set(why "no MPI C library found")
    elseif(NOT MPIEXEC_EXECUTABLE)
      set(why "no mpiexec found")
    else()
      set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
      set(CMAKE_REQUIRED_QUIET ON)
      check_c_source_compiles("#include <mpi.h>
int main(int argc, char **argv) { int p; MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &p); return MPI_Finalize(); }"
        ABAR_MPI_LINKS)
      set(ok ${ABAR_MPI_LINKS})
      set(why "an MPI program does not link against ${MPI_C_LIBRARIES}")
    endif()
  endif()
  abar_settle(ABAR_WITH_MPI "${ok}" "the MPI layer (libabar_mpi, its tests and bench)" "${why}"
              "libopenmpi-dev openmpi-bin")
  set(ABAR_WITH_MPI ${ABAR_WITH_MPI} PARENT_SCOPE)
endfunction()

# ---- the CUDA layer's programs (cuda/): nvcc for sm_90a ------------------------------
function(abar_probe_cuda)
  set(ok FALSE)
  set(why "")
  string(TOUPPER "${ABAR_WITH_CUDA}" want)
  if(ABAR_SANITIZE AND NOT want STREQUAL "OFF")
    set(ABAR_WITH_CUDA OFF PARENT_SCOPE) # nvcc takes no -fsanitize
    message(STATUS "abar: left out: the CUDA layer's programs (a ${ABAR_SANITIZE} sanitizer build)")
    return()
  endif()
  if(NOT want STREQUAL "OFF")
    include(CheckLanguage)
    check_language(CUDA)
    if(NOT CMAKE_CUDA_COMPILER)
      set(why "no CUDA compiler found (or set CMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)")
    else()
      # The layer's programs are compiled for sm_90a (Hopper), host flags as cuda/ gives them.
      file(WRITE ${ABAR_PROBE_DIR}/cuda_probe.cu "__global__ void k(int *p) { p[threadIdx.x] = 1; }
int main() { int *p; if (cudaMalloc(&p, 64) != cudaSuccess) return 0; k<<<1, 1>>>(p); return cudaDeviceSynchronize() != cudaSuccess; }\n")
      set(ccbin "")
      if(CMAKE_CUDA_HOST_COMPILER)
        set(ccbin -ccbin ${CMAKE_CUDA_HOST_COMPILER})
      endif()
      abar_try_tool(ok cuda ${CMAKE_CUDA_COMPILER} ${ccbin} -std=c++17 -arch=sm_90a -Xcompiler=-Wall,-Wextra
                    cuda_probe.cu -o cuda_probe)
      set(why "${CMAKE_CUDA_COMPILER} cannot build for sm_90a: see ${ABAR_PROBE_DIR}/cuda.log")
    endif()
  endif()
  abar_settle(ABAR_WITH_CUDA "${ok}" "the CUDA layer's programs (cuda/; include/abar_cuda.h is still installed)"
              "${why}" "nvidia-cuda-toolkit (CUDA 12 or later)")
  set(ABAR_WITH_CUDA ${ABAR_WITH_CUDA} PARENT_SCOPE)
  set(CMAKE_CUDA_COMPILER ${CMAKE_CUDA_COMPILER} PARENT_SCOPE)
endfunction()
