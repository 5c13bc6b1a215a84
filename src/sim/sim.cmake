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
add_library(kl_sim STATIC ${KERNELAB_SIM_RUNTIME_SOURCES})
target_include_directories(kl_sim BEFORE PUBLIC ${KERNELAB_SIM_DIR}/shadow)
target_include_directories(kl_sim PUBLIC ${CMAKE_SOURCE_DIR}/src ${KERNELAB_SIM_CUDA_INCLUDE}
                           ${KERNELAB_BOOST_CONTEXT_INCLUDE})
target_link_libraries(kl_sim PUBLIC ${KERNELAB_BOOST_CONTEXT_LIB} Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(kl_sim PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_compile_options(kl_sim PRIVATE -Wall -Wextra -O2)

# `kernelab sim run` and `sim bench`: the <<<>>> rewriter, the compile-and-run driver.
file(GLOB KERNELAB_SIMRUN_SOURCES CONFIGURE_DEPENDS ${KERNELAB_SIM_DIR}/run/*.cpp)
add_library(kl_simrun STATIC ${KERNELAB_SIMRUN_SOURCES})
target_include_directories(kl_simrun PUBLIC ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(kl_simrun PUBLIC kl_sim fmt::fmt)
target_compile_options(kl_simrun PRIVATE -Wall -Wextra)
target_compile_definitions(kl_simrun PRIVATE
  KERNELAB_SIM_CXX="${CMAKE_CXX_COMPILER}"
  KERNELAB_SIM_DIR="${KERNELAB_SIM_DIR}"
  KERNELAB_SIM_CUDA_INCLUDE="${KERNELAB_SIM_CUDA_INCLUDE}"
  KERNELAB_SIM_LIBRARY="$<TARGET_FILE:kl_sim>"
  KERNELAB_SIM_LINK_LIBS="${KERNELAB_BOOST_CONTEXT_LIB}")

