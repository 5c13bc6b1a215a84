# The SIMT simulator (src/sim): CUDA C++ built by the host compiler, kernels run on fibers.
# Needs the CUDA toolkit's headers (vector types, fp16/bf16/fp8 host paths) and Boost.Context
# (libboost-context-dev), not a GPU. Included by the top-level CMakeLists.txt.
find_package(Threads REQUIRED)
find_path(KERNELAB_BOOST_CONTEXT_INCLUDE boost/context/detail/fcontext.hpp)
find_library(KERNELAB_BOOST_CONTEXT_LIB NAMES boost_context)
if(NOT CUDAToolkit_FOUND OR NOT KERNELAB_BOOST_CONTEXT_INCLUDE OR NOT KERNELAB_BOOST_CONTEXT_LIB)
  message(STATUS "kernelab: no simulator (it needs the CUDA toolkit's headers and Boost.Context)")
  return()
endif()
set(KERNELAB_SIM_DIR ${CMAKE_SOURCE_DIR}/src/sim)
list(GET CUDAToolkit_INCLUDE_DIRS 0 KERNELAB_SIM_CUDA_INCLUDE)

# The runtime: scheduler, launch checks, runtime API. Programs that `kernelab sim run`
# compiles link this archive, so it is position independent like their executables.
file(GLOB KERNELAB_SIM_RUNTIME_SOURCES CONFIGURE_DEPENDS ${KERNELAB_SIM_DIR}/runtime/*.cpp)
add_library(kernelab_sim STATIC ${KERNELAB_SIM_RUNTIME_SOURCES})
target_include_directories(kernelab_sim BEFORE PUBLIC ${KERNELAB_SIM_DIR}/shadow)
target_include_directories(kernelab_sim PUBLIC ${CMAKE_SOURCE_DIR}/src ${KERNELAB_SIM_CUDA_INCLUDE}
                           ${KERNELAB_BOOST_CONTEXT_INCLUDE})
target_link_libraries(kernelab_sim PUBLIC ${KERNELAB_BOOST_CONTEXT_LIB} Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(kernelab_sim PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_compile_options(kernelab_sim PRIVATE -Wall -Wextra -O2)

# `kernelab sim run` and `sim bench`: the <<<>>> rewriter, the compile-and-run driver.
file(GLOB KERNELAB_SIMRUN_SOURCES CONFIGURE_DEPENDS ${KERNELAB_SIM_DIR}/run/*.cpp)
add_library(kernelab_simrun STATIC ${KERNELAB_SIMRUN_SOURCES})
target_include_directories(kernelab_simrun PUBLIC ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(kernelab_simrun PUBLIC kernelab_sim fmt::fmt)
target_compile_options(kernelab_simrun PRIVATE -Wall -Wextra)
target_compile_definitions(kernelab_simrun PRIVATE
  KERNELAB_SIM_CXX="${CMAKE_CXX_COMPILER}"
  KERNELAB_SIM_DIR="${KERNELAB_SIM_DIR}"
  KERNELAB_SIM_CUDA_INCLUDE="${KERNELAB_SIM_CUDA_INCLUDE}"
  KERNELAB_SIM_LIBRARY="$<TARGET_FILE:kernelab_sim>"
  KERNELAB_SIM_LINK_LIBS="${KERNELAB_BOOST_CONTEXT_LIB}")

# The sim backend: kernelab's own CUDA rungs (src/ops/*/cuda/*.cu) built a second time, by the
# host compiler with the simulator's header, plus the device that runs them.
file(GLOB_RECURSE KERNELAB_RUNG_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/ops/*.cu)
set(KERNELAB_SIM_RUNG_WRAPPERS)
foreach(rung ${KERNELAB_RUNG_SOURCES})
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR}/src/ops ${rung})
  string(REPLACE "/" "_" flat ${rel})
  set(wrapper ${CMAKE_BINARY_DIR}/sim_rungs/${flat}.cpp)
  file(CONFIGURE OUTPUT ${wrapper} CONTENT "// Generated: src/ops/${rel} built for the simulator. Do not edit.\n#include \"${rung}\"\n")
  list(APPEND KERNELAB_SIM_RUNG_WRAPPERS ${wrapper})
endforeach()
add_library(kernelab_simops STATIC ${KERNELAB_SIM_RUNG_WRAPPERS} ${KERNELAB_SIM_DIR}/device/sim_device.cpp)
target_compile_options(kernelab_simops PRIVATE -include ${KERNELAB_SIM_DIR}/cuda_sim.h -O2 -Wall -Wextra)
target_include_directories(kernelab_simops PRIVATE ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(kernelab_simops PUBLIC kernelab_sim kernelab_core)
target_compile_definitions(kernelab_simops PUBLIC KERNELAB_HAVE_SIM_OPS=1)
target_link_libraries(kernelab_core PUBLIC kernelab_simops)

target_link_libraries(kernelab PRIVATE kernelab_simrun)
target_compile_definitions(kernelab PRIVATE KERNELAB_HAVE_SIM=1)
target_link_libraries(kernelab_tests PRIVATE kernelab_simrun)
target_include_directories(kernelab_tests BEFORE PRIVATE ${KERNELAB_SIM_DIR}/shadow)
target_compile_definitions(kernelab_tests PRIVATE KERNELAB_HAVE_SIM=1)

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
