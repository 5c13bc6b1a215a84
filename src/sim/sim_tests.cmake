# Tests of the simulator beyond the gtest ones. Included by the top-level CMakeLists.txt.
# Every program in tests/sim is ordinary CUDA: it must also compile with nvcc.
if(CMAKE_CUDA_COMPILER)
  file(GLOB KERNELAB_SIM_PROGRAMS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/sim/*.cu)
  foreach(program ${KERNELAB_SIM_PROGRAMS})
    get_filename_component(name ${program} NAME_WE)
    add_test(NAME sim_program_compiles_with_nvcc.${name}
             COMMAND ${CMAKE_CUDA_COMPILER} -arch=sm_80 -I ${CMAKE_SOURCE_DIR}/src -c ${program}
                     -o ${CMAKE_BINARY_DIR}/sim_nvcc_${name}.o)
  endforeach()
  # tests/test_ptx_twins.cpp compiles src/cuda/ptx.h with it (sm_80, sm_90a, the PTX text).
  target_compile_definitions(kernelab_tests PRIVATE KERNELAB_NVCC="${CMAKE_CUDA_COMPILER}")
endif()
# scripts/ncu_compare.py (the device check's simulator-against-ncu table) on synthetic ncu CSV.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME ncu_compare COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/ncu_compare_test.py)
endif()
# Every operator's CUDA rungs over its check sweep with the race check on: each launch runs
# with barrier intervals forward and reversed, and a difference fails it (`sim run --race-check`).
# COST: the seconds each took on 2 cores, so that a fresh `ctest -j` starts the long ones first
# instead of leaving them, in test-number order, for the end.
if(TARGET kl_sim)
  foreach(op_cost gemm:136 gemm_w4a16:24 gemm_w8a8:16 gemm_fp8:10 attention:153 attention_bwd:82 decode:10 softmax:15
          layernorm:25 rmsnorm:23 transpose:6 reduce:31 bias_gelu:5)
    string(REPLACE ":" ";" pair ${op_cost})
    list(GET pair 0 op)
    list(GET pair 1 cost)
    add_test(NAME sim_race_check.${op} COMMAND kernelab check ${op} --backend sim)
    set_tests_properties(sim_race_check.${op} PROPERTIES ENVIRONMENT KERNELAB_SIM_RACE_CHECK=1 COST ${cost})
  endforeach()
endif()
