# One family's CUDA static facts, run at build time by cmake/ops.cmake:
#   cmake -DCUOBJDUMP=… -DNVDISASM_DIR=… -DOBJECTS=a.cu.o|b.cu.o -DBATCH_DIR=build/cuda_batches
#         -DOUT=/abs/family.txt -P cuda_static_dump.cmake
# (BATCH_DIR: the generated files that include several rung files, compiled as one object each).
# OUT holds, for each object, a line "#kernelab-object <path relative to src/ops>" (a batch's: the
# paths of the rung files it includes, separated by blanks) and then what
# `cuobjdump -res-usage -sass -ptx` printed for it.
cmake_minimum_required(VERSION 3.24)
string(REPLACE "|" ";" OBJECTS "${OBJECTS}")
set(ENV{PATH} "${NVDISASM_DIR}:$ENV{PATH}")  # cuobjdump -sass runs nvdisasm
set(text "")
foreach(object ${OBJECTS})
  execute_process(COMMAND ${CUOBJDUMP} -res-usage -sass -ptx ${object} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cuobjdump ${object} failed:\n${err}")
  endif()
  if(object MATCHES "/cuda_batches/([^/]+)\\.o(bj)?$")  # a batch (cmake/ops.cmake): the rung files it includes
    file(STRINGS ${BATCH_DIR}/${CMAKE_MATCH_1} includes REGEX "^#include ")
    list(TRANSFORM includes REPLACE "^#include \".*/src/ops/(.*)\"$" "\\1")
    list(JOIN includes " " rel)
  else()
    string(REGEX REPLACE ".*/src/ops/" "" rel "${object}")
    string(REGEX REPLACE "\\.o(bj)?$" "" rel "${rel}")
  endif()
  string(APPEND text "#kernelab-object ${rel}\n${out}\n")
endforeach()
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
