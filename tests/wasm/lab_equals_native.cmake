# The lab built for WebAssembly (preset wasm, run by Node) prints the same `--json` as the native lab on
# its portable kernels, byte for byte: the same kernels, one thread (docs/wasm.md).
#
#   cmake -DNODE=node -DLAB_JS=build/wasm/examples/lab.js -DLAB=build/release/examples/lab -P lab_equals_native.cmake
cmake_minimum_required(VERSION 3.19)
foreach(var NODE LAB_JS LAB)
  if(NOT ${var})
    message(FATAL_ERROR "lab_equals_native.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT EXISTS "${LAB_JS}")
  message(FATAL_ERROR "no ${LAB_JS}: build it first (cmake --preset wasm && cmake --build --preset wasm --target lab)")
endif()
execute_process(COMMAND "${NODE}" "${LAB_JS}" --json RESULT_VARIABLE wasm_code OUTPUT_VARIABLE wasm_out ERROR_VARIABLE wasm_err)
execute_process(COMMAND ${CMAKE_COMMAND} -E env TINYGPT_ISA=portable "${LAB}" --json
                RESULT_VARIABLE native_code OUTPUT_VARIABLE native_out ERROR_VARIABLE native_err)
if(NOT wasm_code EQUAL 0 OR NOT native_code EQUAL 0)
  message(FATAL_ERROR "lab --json exited with ${wasm_code} under Node, ${native_code} natively\n${wasm_err}\n${native_err}")
endif()
if(NOT wasm_out STREQUAL native_out)
  message(FATAL_ERROR "lab --json differs between WebAssembly and native (portable kernels):\n${wasm_out}\n${native_out}")
endif()
string(LENGTH "${wasm_out}" length)
message(STATUS "the same ${length} bytes of --json")
