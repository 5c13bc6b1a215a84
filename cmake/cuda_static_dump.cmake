# One family's CUDA static facts, run at build time by cmake/ops.cmake:
#   cmake -DCUOBJDUMP=… -DNVDISASM_DIR=… -DOBJECTS=a.cu.o|b.cu.o -DOUT=/abs/family.txt -P cuda_static_dump.cmake
# OUT holds, for each object, a line "#kernelab-object <path relative to src/ops>" and then what
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
  string(REGEX REPLACE ".*/src/ops/" "" rel "${object}")
  string(REGEX REPLACE "\\.o(bj)?$" "" rel "${rel}")
  string(APPEND text "#kernelab-object ${rel}\n${out}\n")
endforeach()
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
