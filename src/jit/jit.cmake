# kl_expr: the expression language, its code generator, the NVRTC compile and cache, and the
# generated schedules' launches through the driver API (when the toolkit's NVRTC and cuda.h are
# found; both libraries are opened at their first use). The `fused` op's rungs stand on it.
# kl_jit: `kernelab fuse`, which adds the simulator runs of both schedules (kl_simrun).
add_library(kl_expr STATIC ${CMAKE_SOURCE_DIR}/src/jit/expr.cpp ${CMAKE_SOURCE_DIR}/src/jit/codegen.cpp
                           ${CMAKE_SOURCE_DIR}/src/jit/nvrtc.cpp ${CMAKE_SOURCE_DIR}/src/jit/gpu_launch.cpp)
target_link_libraries(kl_expr PUBLIC kl_base)
kl_cxx_options(kl_expr)
kl_unity(kl_expr 0)
if(TARGET CUDA::nvrtc)
  list(GET CUDAToolkit_INCLUDE_DIRS 0 KERNELAB_JIT_CUDA_INCLUDE)
  target_include_directories(kl_expr PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(kl_expr PRIVATE ${CMAKE_DL_LIBS})
  target_compile_definitions(kl_expr PRIVATE KERNELAB_HAVE_NVRTC=1 KERNELAB_JIT_CUDA_INCLUDE="${KERNELAB_JIT_CUDA_INCLUDE}")
else()
  message(STATUS "kernelab: no NVRTC found; fuse --arch falls back to the unfused chain, and the fused op has no GPU run")
endif()
if(TARGET kl_simrun)
  add_library(kl_jit STATIC ${CMAKE_SOURCE_DIR}/src/jit/fuse.cpp)
  target_link_libraries(kl_jit PUBLIC kl_expr kl_simrun)
  kl_cxx_options(kl_jit)
endif()
