# The ops: one library per op folder (src/ops/<family>: op.cpp, the CPU rungs, and the CUDA rung
# files cuda/*.cu built twice, by nvcc and by the host compiler against the simulator's header),
# the rung list generated from those files, and kl_registry, which holds the op list and merges
# each rung's two builds. Included by the top-level CMakeLists.txt after kl_base and kl_sim.
set(KERNELAB_OPS_DIR ${CMAKE_SOURCE_DIR}/src/ops)
file(GLOB families LIST_DIRECTORIES true RELATIVE ${KERNELAB_OPS_DIR} CONFIGURE_DEPENDS ${KERNELAB_OPS_DIR}/*)
set(KERNELAB_RUNG_IDS)
set(KERNELAB_FAMILY_LIBS)
set(KERNELAB_CUDA_FAMILIES)
set(first_sim_family)  # whose simulator builds hold the precompiled header the others reuse

# The cuDNN peers (rung files named *cudnn*.cu) need cudnn-frontend's headers (header-only; PyPI's
# nvidia-cudnn-frontend, which scripts/install-deps.sh installs, puts them in site-packages/include)
# and cuDNN's own; libcudnn is opened at run time, not linked. Without them those files are left out.
find_package(Python3 COMPONENTS Interpreter)
set(purelib)
if(Python3_FOUND)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"
                  OUTPUT_VARIABLE purelib OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
set(KERNELAB_CUDNN_RUNGS OFF)
if(CMAKE_CUDA_COMPILER)
  find_path(KERNELAB_CUDNN_FRONTEND_INCLUDE cudnn_frontend.h HINTS ${purelib}/include)
  find_path(KERNELAB_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${purelib}/nvidia/cudnn/include)
  # Where libcudnn is, for a run whose loader does not find it by name (PyTorch's pip cuDNN).
  find_library(KERNELAB_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${CUDAToolkit_LIBRARY_DIR} ${purelib}/nvidia/cudnn/lib)
  if(KERNELAB_CUDNN_FRONTEND_INCLUDE AND KERNELAB_CUDNN_INCLUDE)
    set(KERNELAB_CUDNN_RUNGS ON)
  else()
    message(STATUS "kernelab: no cudnn-frontend (pip install nvidia-cudnn-frontend) or no cudnn.h: the cuDNN SDPA peers are left out")
  endif()
endif()

foreach(family ${families})
  if(NOT IS_DIRECTORY ${KERNELAB_OPS_DIR}/${family})
    continue()
  endif()
  file(GLOB cpu_sources CONFIGURE_DEPENDS ${KERNELAB_OPS_DIR}/${family}/*.cpp)
  set(isa_sources ${cpu_sources})  # the CPU rungs (*cpu.cpp): one build per instruction-set level
  list(FILTER isa_sources INCLUDE REGEX "cpu\\.cpp$")
  list(FILTER cpu_sources EXCLUDE REGEX "cpu\\.cpp$")
  file(GLOB rung_sources CONFIGURE_DEPENDS ${KERNELAB_OPS_DIR}/${family}/cuda/*.cu)
  if(NOT KERNELAB_CUDNN_RUNGS)
    list(FILTER rung_sources EXCLUDE REGEX "cudnn[^/]*\\.cu$")
  endif()
  add_library(kl_${family} STATIC ${cpu_sources})
  target_link_libraries(kl_${family} PUBLIC kl_base)
  kl_cxx_options(kl_${family})
  if(NOT family STREQUAL "attention")  # its forward and backward files each define Exact and InDtype
    kl_unity(kl_${family} 0)
  endif()
  kl_cpu_isa_sources(kl_${family} ${isa_sources})
  list(APPEND KERNELAB_FAMILY_LIBS kl_${family})
  set(sim_wrappers)
  foreach(rung ${rung_sources})
    # The rung's id, from its path: softmax/cuda/v04_warp_vectorized.cu -> softmax_cuda_v04_warp_vectorized.
    file(RELATIVE_PATH rel ${KERNELAB_OPS_DIR} ${rung})
    string(REGEX REPLACE "\\.cu$" "" id ${rel})
    string(REPLACE "/" "_" id ${id})
    list(APPEND KERNELAB_RUNG_IDS ${id})
    set_source_files_properties(${rung} PROPERTIES COMPILE_DEFINITIONS KL_RUNG_ID=${id})
    if(rel MATCHES "cudnn[^/]*\\.cu$")  # -isystem: the frontend's own warnings are not ours
      set_source_files_properties(${rung} PROPERTIES COMPILE_OPTIONS
                                  "-isystem;${KERNELAB_CUDNN_FRONTEND_INCLUDE};-isystem;${KERNELAB_CUDNN_INCLUDE}")
      if(KERNELAB_CUDNN_LIBRARY)
        set_property(SOURCE ${rung} APPEND PROPERTY COMPILE_DEFINITIONS KERNELAB_CUDNN_LIBRARY="${KERNELAB_CUDNN_LIBRARY}")
      endif()
    endif()
    set(wrapper ${CMAKE_BINARY_DIR}/sim_rungs/${id}.cpp)
    file(CONFIGURE OUTPUT ${wrapper} CONTENT
         "// Generated: src/ops/${rel} built for the simulator. Do not edit.\n#define KL_RUNG_ID ${id}\n#include \"${rung}\"\n")
    list(APPEND sim_wrappers ${wrapper})
  endforeach()
  if(rung_sources AND CMAKE_CUDA_COMPILER)
    add_library(kl_${family}_cuda OBJECT ${rung_sources})
    target_link_libraries(kl_${family}_cuda PRIVATE kl_base)
    kl_cuda_options(kl_${family}_cuda)
    target_sources(kl_${family} PRIVATE $<TARGET_OBJECTS:kl_${family}_cuda>)
    target_link_libraries(kl_${family} PUBLIC CUDA::cudart)
    list(APPEND KERNELAB_CUDA_FAMILIES ${family})
  endif()
  if(rung_sources AND TARGET kl_sim)
    add_library(kl_${family}_sim OBJECT ${sim_wrappers})
    # -fno-strict-aliasing: CUDA code reads memory through other types (a float4 over floats, a
    # 16-byte chunk over halves), which nvcc compiles as written and GCC's -O2 need not.
    # -fsanitize=alignment: a misaligned typed access faults as on a GPU (src/sim/runtime/ubsan_hooks.cpp).
    # -O1: the welford wrapper compiles in 4.1 s against -O2's 7.8, and its SimRung test runs 3-5% longer;
    # the compute-heavy rungs' (attention, tensor-core gemm) 6-17 s longer each (the simulator's own code,
    # kl_sim, keeps -O3). The profiling build keeps -O2: the rung notes quote its counts.
    target_compile_options(kl_${family}_sim PRIVATE -O1 -fno-strict-aliasing -Wall -Wextra -Wno-psabi -fsanitize=alignment)
    target_link_libraries(kl_${family}_sim PRIVATE kl_base kl_sim)
    target_sources(kl_${family} PRIVATE $<TARGET_OBJECTS:kl_${family}_sim>)
    # The profiling build (`kernelab sim profile`): GCC's ThreadSanitizer instrumentation at compile
    # time only, every load and store a call to the hooks in src/sim/runtime/tsan_hooks.cpp. No
    # vectorising and no splitting of aggregates (-fno-tree-sra keeps a uint4 store one 16-byte access), so
    # each access stays the width the source wrote, as nvcc emits it. -fsanitize-coverage=trace-pc marks
    # every basic block, from which the profiler tells loop iterations apart (divergent lanes); with
    # -fno-reorder-blocks(-and-partition) a loop's blocks lie between its first block and its back edge, in source order.
    add_library(kl_${family}_simprof OBJECT ${sim_wrappers})
    target_compile_options(kl_${family}_simprof PRIVATE -O2 -fno-strict-aliasing -Wall -Wextra -Wno-psabi
                           -fsanitize=thread --param=tsan-instrument-func-entry-exit=0 -fno-tree-vectorize -fno-tree-sra
                           -fsanitize-coverage=trace-pc -fno-reorder-blocks
                           -fno-reorder-blocks-and-partition -Wno-tsan)
    target_compile_definitions(kl_${family}_simprof PRIVATE KERNELAB_SIM_PROFILE=1)
    target_link_libraries(kl_${family}_simprof PRIVATE kl_base kl_sim)
    target_sources(kl_${family} PRIVATE $<TARGET_OBJECTS:kl_${family}_simprof>)
    target_link_libraries(kl_${family} PUBLIC kl_sim)
    # The simulator's header, included first as nvcc includes cuda_runtime.h, parsed once for all
    # families' simulator builds (same flags) and once for their profiling builds: a second or so of
    # each of the 130-odd wrappers' compile.
    if(NOT first_sim_family)
      set(first_sim_family ${family})
      foreach(build sim simprof)
        target_precompile_headers(kl_${family}_${build} PRIVATE ${KERNELAB_SIM_DIR}/cuda_sim.h)
      endforeach()
    else()
      target_precompile_headers(kl_${family}_sim REUSE_FROM kl_${first_sim_family}_sim)
      target_precompile_headers(kl_${family}_simprof REUSE_FROM kl_${first_sim_family}_simprof)
    endif()
  endif()
endforeach()

# gemm_w4a16 draws its int4 weights with the quantizers and packs them in fragment order (src/quant).
target_link_libraries(kl_gemm_w4a16 PUBLIC kl_quant)
# gemm_w8a8 and gemm_fp8 quantize their drawn activations and weights with them.
target_link_libraries(kl_gemm_w8a8 PUBLIC kl_quant)
target_link_libraries(kl_gemm_fp8 PUBLIC kl_quant)

# The fused op's rungs are generated from each problem's expression (src/jit): kl_expr always,
# the simulator's runs of them where `kernelab fuse` is built.
target_link_libraries(kl_fused PUBLIC kl_expr)
if(TARGET kl_jit)
  target_link_libraries(kl_fused PUBLIC kl_jit)
  target_compile_definitions(kl_fused PRIVATE KERNELAB_HAVE_FUSE=1)
endif()

# The rung list: one KL_RUNG_FILE(id) line per rung file, regenerated whenever a file is added.
list(TRANSFORM KERNELAB_RUNG_IDS PREPEND "KL_RUNG_FILE(" OUTPUT_VARIABLE lines)
list(TRANSFORM lines APPEND ")")
string(REPLACE ";" "\n" lines "${lines}")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/generated/ops/rung_files.h CONTENT
     "// Generated by cmake/ops.cmake from src/ops/*/cuda/*.cu: do not edit.\n${lines}\n")

add_library(kl_registry STATIC ${KERNELAB_OPS_DIR}/registry.cpp)
target_link_libraries(kl_registry PUBLIC ${KERNELAB_FAMILY_LIBS})
target_include_directories(kl_registry PRIVATE ${CMAKE_BINARY_DIR}/generated)
kl_cxx_options(kl_registry)
if(CMAKE_CUDA_COMPILER)
  target_compile_definitions(kl_registry PRIVATE KERNELAB_HAVE_CUDA=1)
endif()
if(TARGET kl_sim)
  target_compile_definitions(kl_registry PRIVATE KERNELAB_HAVE_SIM_OPS=1)
endif()

# The CUDA rungs' static facts, from the built objects (no second compile): cuobjdump's resource
# usage, SASS and embedded sm_90a PTX of every rung object, one file per family under
# build/cuda_static, read by src/ops/static_facts.cpp (list, report, tests). cuobjdump and the
# nvdisasm it runs come from the toolkit or PyPI (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm).
if(NOT CMAKE_CUDA_COMPILER)
  return()
endif()
set(pypi_bin)
if(purelib)
  set(pypi_bin ${purelib}/nvidia/cu13/bin)
endif()
find_program(KERNELAB_CUOBJDUMP cuobjdump HINTS ${CUDAToolkit_BIN_DIR} ${pypi_bin})
find_program(KERNELAB_NVDISASM nvdisasm HINTS ${CUDAToolkit_BIN_DIR} ${pypi_bin})
set(KERNELAB_CUDA_STATIC_DIR ${CMAKE_BINARY_DIR}/cuda_static)
target_compile_definitions(kl_base PRIVATE KERNELAB_CUDA_STATIC_DIR="${KERNELAB_CUDA_STATIC_DIR}")
if(NOT KERNELAB_CUOBJDUMP OR NOT KERNELAB_NVDISASM)
  message(WARNING "kernelab: no cuobjdump/nvdisasm (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm): "
                  "the CUDA static checks will fail")
  return()
endif()
get_filename_component(nvdisasm_dir ${KERNELAB_NVDISASM} DIRECTORY)
set(dumps)
foreach(family ${KERNELAB_CUDA_FAMILIES})
  set(out ${KERNELAB_CUDA_STATIC_DIR}/${family}.txt)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DCUOBJDUMP=${KERNELAB_CUOBJDUMP} -DNVDISASM_DIR=${nvdisasm_dir}
            "-DOBJECTS=$<JOIN:$<TARGET_OBJECTS:kl_${family}_cuda>,|>" -DOUT=${out}
            -P ${CMAKE_SOURCE_DIR}/cmake/cuda_static_dump.cmake
    DEPENDS $<TARGET_OBJECTS:kl_${family}_cuda> ${CMAKE_SOURCE_DIR}/cmake/cuda_static_dump.cmake
    COMMENT "cuobjdump: resources, SASS and PTX of the ${family} rungs"
    VERBATIM)
  list(APPEND dumps ${out})
endforeach()
add_custom_target(kl_cuda_static ALL DEPENDS ${dumps})
