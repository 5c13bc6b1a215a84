# Static checks of the CUDA rungs (conventions 8), gathered at build time: for every
# src/ops/**/*.cu, the PTX for each arch of KERNELAB_CUDA_STATIC_ARCHS and ptxas's resource
# report (registers, static shared memory, spills, stack frame per kernel), all in
# build/cuda_static.json, which tests/test_cuda_static.cpp, `kernelab list` and `kernelab report`
# read (src/ops/gpu_resources.h). Each rung is redone when it or a header it includes changes.
# Without nvcc there is no file, and the readers say "no CUDA compiler: static checks skipped".
# Included by the top-level CMakeLists.txt after the targets exist.
if(NOT CMAKE_CUDA_COMPILER)
  return()
endif()
set(KERNELAB_CUDA_STATIC_ARCHS sm_80 sm_90a)
set(KERNELAB_CUDA_STATIC_PTX_ARCH sm_90a)  # the PTX the instruction claims are checked in
set(KERNELAB_CUDA_STATIC_JSON ${CMAKE_BINARY_DIR}/cuda_static.json)
find_program(KERNELAB_CXXFILT NAMES c++filt cu++filt)

# The flags kernelab_cuda compiles the rungs with (one arch at a time instead of its -gencode list).
string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
separate_arguments(flags UNIX_COMMAND "${CMAKE_CUDA_FLAGS} ${CMAKE_CUDA_FLAGS_${config}}")
list(APPEND flags -std=c++20 -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src -DKERNELAB_HAVE_CUDA=1)
string(REPLACE ";" "|" flags "${flags}")
string(REPLACE ";" "|" archs "${KERNELAB_CUDA_STATIC_ARCHS}")

set(dir ${CMAKE_BINARY_DIR}/cuda_static)
file(MAKE_DIRECTORY ${dir})
file(GLOB_RECURSE rungs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/ops/*.cu)
set(fragments)
foreach(rung ${rungs})
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR}/src/ops ${rung})
  string(REPLACE "/" "_" flat ${rel})
  set(out ${dir}/${flat})
  set(outputs ${out}.json)
  foreach(arch ${KERNELAB_CUDA_STATIC_ARCHS})
    list(APPEND outputs ${out}.${arch}.ptx ${out}.${arch}.ptxas.txt)
  endforeach()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DCXXFILT=${KERNELAB_CXXFILT} -DSOURCE=${rung}
            -DREL=${rel} -DOUT=${out} -DARCHS=${archs} -DFLAGS=${flags}
            -P ${CMAKE_SOURCE_DIR}/cmake/cuda_static_rung.cmake
    DEPENDS ${rung} ${CMAKE_SOURCE_DIR}/cmake/cuda_static_rung.cmake
    DEPFILE ${out}.d
    COMMENT "ptxas resources and PTX of src/ops/${rel}"
    VERBATIM)
  list(APPEND fragments ${out}.json)
endforeach()
string(REPLACE ";" "|" fragment_arg "${fragments}")
add_custom_command(
  OUTPUT ${KERNELAB_CUDA_STATIC_JSON}
  COMMAND ${CMAKE_COMMAND} -DFRAGMENTS=${fragment_arg} -DOUT=${KERNELAB_CUDA_STATIC_JSON}
          -DNVCC=${CMAKE_CUDA_COMPILER} -DARCHS=${archs} -DPTX_ARCH=${KERNELAB_CUDA_STATIC_PTX_ARCH}
          -P ${CMAKE_SOURCE_DIR}/cmake/cuda_static_merge.cmake
  DEPENDS ${fragments} ${CMAKE_SOURCE_DIR}/cmake/cuda_static_merge.cmake
  COMMENT "CUDA static facts of ${CMAKE_BINARY_DIR}/cuda_static.json"
  VERBATIM)
add_custom_target(kernelab_cuda_static ALL DEPENDS ${KERNELAB_CUDA_STATIC_JSON})
add_dependencies(kernelab_tests kernelab_cuda_static)

# Where the readers find the file (src/ops/gpu_resources.cpp is part of kernelab_core).
target_compile_definitions(kernelab_core PRIVATE KERNELAB_CUDA_STATIC_JSON="${KERNELAB_CUDA_STATIC_JSON}")
