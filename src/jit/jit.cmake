# kl_jit: `kernelab fuse`, the expression language, its code generator, the NVRTC compile and
# cache (when the toolkit's NVRTC is found), and the simulator runs of both schedules (kl_simrun).
file(GLOB KERNELAB_JIT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/jit/*.cpp)
add_library(kl_jit STATIC ${KERNELAB_JIT_SOURCES})
target_link_libraries(kl_jit PUBLIC kl_base kl_simrun)
kl_cxx_options(kl_jit)
if(TARGET CUDA::nvrtc)
  list(GET CUDAToolkit_INCLUDE_DIRS 0 KERNELAB_JIT_CUDA_INCLUDE)
  # Headers only: src/jit/nvrtc.cpp opens the library at its first use.
  target_include_directories(kl_jit PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(kl_jit PRIVATE ${CMAKE_DL_LIBS})
  target_compile_definitions(kl_jit PRIVATE KERNELAB_HAVE_NVRTC=1 KERNELAB_JIT_CUDA_INCLUDE="${KERNELAB_JIT_CUDA_INCLUDE}")
else()
  message(STATUS "kernelab: no NVRTC found; fuse --arch falls back to the unfused chain")
endif()
