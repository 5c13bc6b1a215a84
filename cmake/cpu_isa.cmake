# kl_cpu_isa_sources(target SOURCES...): the CPU kernels in SOURCES compiled once per x86
# instruction-set level, all three linked into target and chosen at run time (src/ops/cpu_isa.h).
# The rest of kernelab is built for the x86-64 baseline, so one binary runs on any x86-64 CPU.
find_package(Python3 REQUIRED COMPONENTS Interpreter)  # the compile step renames symbols (cmake/cpu_isa_object.py)
set(KERNELAB_CPU_ISA_FLAGS_avx2 -march=x86-64-v3)
set(KERNELAB_CPU_ISA_FLAGS_avx512 -march=x86-64-v4 -mprefer-vector-width=512)

function(kl_cpu_isa_sources target)
  if(NOT ARGN)
    return()
  endif()
  target_sources(${target} PRIVATE ${ARGN})  # the generic build: KL_CPU_ISA defaults to isa_generic
  # No floating-point exception flags are read, and with them kept GCC 12 leaves a loop over a
  # clamped function scalar (the clamp's compares stay branches): softmax's loop over its old
  # scalar exp ran 6x slower on AVX2.
  set_property(SOURCE ${ARGN} APPEND PROPERTY COMPILE_OPTIONS -fno-trapping-math)
  foreach(level avx2 avx512)
    set(lib ${target}_${level})
    add_library(${lib} OBJECT ${ARGN})
    target_link_libraries(${lib} PRIVATE kl_base)
    kl_cxx_options(${lib})
    target_compile_options(${lib} PRIVATE ${KERNELAB_CPU_ISA_FLAGS_${level}})
    target_compile_definitions(${lib} PRIVATE KL_CPU_ISA=isa_${level})
    # Each object's shareable code renamed after compiling, so no other build's caller links to it.
    set(launcher ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/cmake/cpu_isa_object.py compile .isa_${level} ${CMAKE_CXX_COMPILER_LAUNCHER})
    set_target_properties(${lib} PROPERTIES CXX_COMPILER_LAUNCHER "${launcher}")
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${lib}>)
    set_property(GLOBAL APPEND PROPERTY KERNELAB_CPU_ISA_OBJECT_LIBS ${lib})  # checked by a test for shared weak symbols
  endforeach()
endfunction()
