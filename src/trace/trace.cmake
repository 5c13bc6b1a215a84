# The trace analyzer and tracer (src/trace, the kl_trace library):
# simdjson On-Demand and zlib to read traces; NVTX3 (header-only) and CUPTI from the CUDA toolkit
# when present. Tests beyond the gtest ones: a libFuzzer run of the reader and the agreement of
# `trace analyze --json` with scripts/trace_reference.py (an independent stdlib-only Python
# computation). Included by the top-level CMakeLists.txt.
find_package(simdjson REQUIRED)  # libsimdjson-dev
find_package(ZLIB REQUIRED)      # zlib1g-dev
file(GLOB KERNELAB_TRACE_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/trace/*.cpp)
add_library(kl_trace STATIC ${KERNELAB_TRACE_SOURCES})
target_link_libraries(kl_trace PUBLIC kl_base simdjson::simdjson ZLIB::ZLIB)
kl_cxx_options(kl_trace)
kl_unity(kl_trace 11)
target_precompile_headers(kl_trace PRIVATE $<$<COMPILE_LANGUAGE:CXX>:<nlohmann/json.hpp$<ANGLE-R>> $<$<COMPILE_LANGUAGE:CXX>:<fmt/format.h$<ANGLE-R>>)

# NVTX ranges around benchmark phases and launches: the toolkit's header-only nvtx3 (it dlopens
# a profiler's injection library only when one is attached).
find_path(KERNELAB_NVTX3_INCLUDE nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(CUDAToolkit_FOUND AND KERNELAB_NVTX3_INCLUDE)
  target_include_directories(kl_trace SYSTEM PRIVATE ${KERNELAB_NVTX3_INCLUDE})
  target_compile_definitions(kl_trace PRIVATE KERNELAB_HAVE_NVTX=1)
  target_link_libraries(kl_trace PUBLIC ${CMAKE_DL_LIBS})
endif()

# The CUPTI activity tracer behind `bench --trace`: only with the CUDA backend.
if(CMAKE_CUDA_COMPILER AND TARGET CUDA::cupti)
  target_link_libraries(kl_trace PUBLIC CUDA::cupti)
  target_compile_definitions(kl_trace PRIVATE KERNELAB_HAVE_CUPTI=1)
else()
  message(STATUS "kernelab: no CUPTI tracer (needs the CUDA backend and the toolkit's CUPTI)")
endif()

# libFuzzer target: clang++ with -fsanitize=fuzzer, built beside the main (g++) build from the
# reader and analyzer sources; line tables only, which the sanitizers' reports need (full -g: 42 s
# of the build instead of 35). Skipped, with a message, where clang's libFuzzer is missing; the
# gtest TraceFuzzLoop then still mutates inputs deterministically.
set(KERNELAB_TRACE_FUZZ_SOURCES byte_source.cpp event_scanner.cpp load.cpp intervals.cpp analyze_gpu.cpp
    analyze_host.cpp analyze_gaps.cpp findings.cpp diff.cpp report_json.cpp)
list(TRANSFORM KERNELAB_TRACE_FUZZ_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/src/trace/)
list(APPEND KERNELAB_TRACE_FUZZ_SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/trace_fuzz.cpp)
find_program(KERNELAB_FUZZ_CXX NAMES clang++-14 clang++)
if(KERNELAB_FUZZ_CXX AND NOT DEFINED KERNELAB_FUZZ_OK)
  file(WRITE ${CMAKE_BINARY_DIR}/fuzz_probe.cpp
       "#include <cstdint>\n#include <cstddef>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${KERNELAB_FUZZ_CXX} -fsanitize=fuzzer ${CMAKE_BINARY_DIR}/fuzz_probe.cpp -o ${CMAKE_BINARY_DIR}/fuzz_probe
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    set(KERNELAB_FUZZ_OK 1 CACHE INTERNAL "clang++ -fsanitize=fuzzer works")
  else()
    set(KERNELAB_FUZZ_OK 0 CACHE INTERNAL "clang++ -fsanitize=fuzzer works")
  endif()
endif()
if(KERNELAB_FUZZ_CXX AND KERNELAB_FUZZ_OK)
  file(GLOB KERNELAB_TRACE_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/trace/*.h)
  add_custom_command(
    OUTPUT ${CMAKE_BINARY_DIR}/fuzz/trace_fuzz
    COMMAND ${KERNELAB_FUZZ_CXX} -std=c++20 -O1 -gline-tables-only -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src ${KERNELAB_TRACE_FUZZ_SOURCES} -lsimdjson -lfmt -lz
            -o ${CMAKE_BINARY_DIR}/fuzz/trace_fuzz
    DEPENDS ${KERNELAB_TRACE_FUZZ_SOURCES} ${KERNELAB_TRACE_HEADERS}
    COMMENT "Building the libFuzzer target trace_fuzz (clang++, ASan+UBSan)")
  add_custom_target(trace_fuzz ALL DEPENDS ${CMAKE_BINARY_DIR}/fuzz/trace_fuzz)
  # New inputs go to the build folder's corpus; the shipped traces are read-only seeds.
  add_test(NAME trace_fuzz
           COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
                   ${CMAKE_BINARY_DIR}/fuzz/trace_fuzz -max_total_time=15 -seed=1 -timeout=5 -rss_limit_mb=1024
                   -dict=${CMAKE_SOURCE_DIR}/tests/fuzz/json.dict ${CMAKE_BINARY_DIR}/fuzz/corpus
                   ${CMAKE_SOURCE_DIR}/tests/data/traces)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz/corpus)
else()
  message(STATUS "kernelab: no libFuzzer target (needs clang++ with -fsanitize=fuzzer)")
endif()

# `trace analyze --json` against the independent Python computation: on the project's own small
# traces and the ones from HTA's tests always, on the real traces in ../shared/data/traces when that
# folder exists.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME trace_reference_own
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/trace_reference.py --kernelab $<TARGET_FILE:kernelab>
                   ${CMAKE_SOURCE_DIR}/tests/data/traces)
  add_test(NAME trace_reference_hta  # real traces from HTA's tests, unseen while writing the analyzer
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/trace_reference.py --kernelab $<TARGET_FILE:kernelab>
                   ${CMAKE_SOURCE_DIR}/tests/data/hta_traces)
  add_test(NAME trace_reference_pytorch  # the PyTorch profiler's published samples (1.9's category spellings)
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/trace_reference.py --kernelab $<TARGET_FILE:kernelab>
                   ${CMAKE_SOURCE_DIR}/tests/data/pytorch_traces)
  add_test(NAME trace_reference_steps_complete  # HTA's default window on the traces with profiler steps
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/trace_reference.py --kernelab $<TARGET_FILE:kernelab>
                   --steps complete ${CMAKE_SOURCE_DIR}/tests/data/hta_traces ${CMAKE_SOURCE_DIR}/tests/data/pytorch_traces)
  add_test(NAME trace_reference_real
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/trace_reference.py --kernelab $<TARGET_FILE:kernelab>
                   --skip-missing ${CMAKE_SOURCE_DIR}/../shared/data/traces)
  set_tests_properties(trace_reference_real PROPERTIES SKIP_RETURN_CODE 77)
  # The critical path against scripts/trace_reference_cpath.py: the second ProfilerStep of every
  # trace with steps, in HTA's default event set and edges (a trace without one must be refused by
  # both); every trace whole with zero-weight launch edges; the project's own traces with HTA's
  # default edges.
  add_test(NAME trace_reference_critical_path_steps
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/trace_reference.py --kernelab $<TARGET_FILE:kernelab>
                   --steps complete --critical-path ProfilerStep@1 ${CMAKE_SOURCE_DIR}/tests/data/hta_traces
                   ${CMAKE_SOURCE_DIR}/tests/data/pytorch_traces)
  add_test(NAME trace_reference_critical_path_whole
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/trace_reference.py --kernelab $<TARGET_FILE:kernelab>
                   --critical-path all --cp-launch-edges ${CMAKE_SOURCE_DIR}/tests/data/traces
                   ${CMAKE_SOURCE_DIR}/tests/data/hta_traces ${CMAKE_SOURCE_DIR}/tests/data/pytorch_traces)
  add_test(NAME trace_reference_critical_path_own
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/trace_reference.py --kernelab $<TARGET_FILE:kernelab>
                   --critical-path all ${CMAKE_SOURCE_DIR}/tests/data/traces)
endif()
