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
