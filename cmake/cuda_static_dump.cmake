# One family's CUDA static facts, run at build time by cmake/ops.cmake:
#   cmake -DCUOBJDUMP=… -DNVDISASM_DIR=… -DOBJECTS=a.cu.o|b.cu.o -DBATCH_DIR=build/cuda_batches
#         -DSASS_ARCH=sm_90a -DOUT=/abs/family.txt -P cuda_static_dump.cmake
# (BATCH_DIR: the generated units, each including one or several rung files, an object each).
# OUT holds, for each object, a line "#kernelab-object <paths relative to src/ops>" (the rung files
# its unit includes, separated by blanks) and then what `cuobjdump -res-usage` (every arch) and
# `cuobjdump -sass -ptx -arch SASS_ARCH` printed for it: the claims are checked in SASS_ARCH's code
# (static_facts.h's kStaticArch); the other arch's SASS too took half as long again (37.6 against 24.4 s).
cmake_minimum_required(VERSION 3.24)
string(REPLACE "|" ";" OBJECTS "${OBJECTS}")
set(ENV{PATH} "${NVDISASM_DIR}:$ENV{PATH}")  # cuobjdump -sass runs nvdisasm
set(text "")
foreach(object ${OBJECTS})
  set(out "")
  foreach(args "-res-usage" "-sass;-ptx;-arch;${SASS_ARCH}")
    execute_process(COMMAND ${CUOBJDUMP} ${args} ${object} RESULT_VARIABLE rc OUTPUT_VARIABLE part ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "cuobjdump ${args} ${object} failed:\n${err}")
    endif()
    string(APPEND out "${part}")
  endforeach()
  # The unit the object is built from (cmake/ops.cmake's kl_rung_units) names the rung files it includes.
  string(REGEX REPLACE "\\.o(bj)?$" "" unit "${object}")
  get_filename_component(unit "${unit}" NAME)
  if(NOT EXISTS ${BATCH_DIR}/${unit})
    message(FATAL_ERROR "${object} is not built from a unit in ${BATCH_DIR}")
  endif()
  file(STRINGS ${BATCH_DIR}/${unit} includes REGEX "^#include ")
  list(TRANSFORM includes REPLACE "^#include \".*/src/ops/(.*)\"$" "\\1")
  list(JOIN includes " " rel)
  string(APPEND text "#kernelab-object ${rel}\n${out}\n")
endforeach()
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
