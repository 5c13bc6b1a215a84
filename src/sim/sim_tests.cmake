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
