# Runs one fuzz target for a fixed time (the `fuzz` CTest label, fuzz/CMakeLists.txt):
#   cmake -DFUZZER=... -DTARGET=png -DSEEDS=data/fuzz/png -DDICT=fuzz/dict/png.dict
#         -DWORK=build/fuzz/fuzz-work/png -DSECONDS=15 -P run_fuzzer.cmake
# KLAB_FUZZ_SECONDS in the environment replaces SECONDS (the long run: fuzz/README.md). The seeds
# (data/fuzz/TARGET, its regressions/ included) are read, never written: what the fuzzer finds goes
# to WORK/corpus, a failing input to WORK/artifacts/.
if(DEFINED ENV{KLAB_FUZZ_SECONDS})
  set(SECONDS "$ENV{KLAB_FUZZ_SECONDS}")
endif()
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
# -max_len: the regressions hold a few large inputs (deep JSON nesting); mutating inputs of that
# size would slow every target down.
set(options -max_total_time=${SECONDS} -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=16384
            -artifact_prefix=${WORK}/artifacts/)
if(DICT)
  list(APPEND options -dict=${DICT})
endif()
message(STATUS "fuzz ${TARGET}: ${SECONDS} s; seeds ${SEEDS}; corpus ${WORK}/corpus")
execute_process(COMMAND "${FUZZER}" ${options} "${WORK}/corpus" "${SEEDS}" RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  file(GLOB found "${WORK}/artifacts/*")
  message(FATAL_ERROR "fuzz ${TARGET} failed (${status}); the input: ${found}. Minimise it into "
                      "data/fuzz/${TARGET}/regressions/, fix the bug, and keep the test (fuzz/README.md).")
endif()
