# Installs the build tree into a scratch prefix, then configures, builds and runs a tiny project that
# uses it only through find_package(tinygpt): the path a downstream user takes. The project has
# examples/custom_model.cpp copied in, as a user copies it, and trains its model kind with the tools.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGV} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package consumer: command failed (${rc}): ${ARGV}")
  endif()
endfunction()
file(MAKE_DIRECTORY ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
file(COPY ${SOURCE_DIR}/tests/consumer/CMakeLists.txt ${SOURCE_DIR}/tests/consumer/main.cpp
     ${SOURCE_DIR}/examples/custom_model.cpp DESTINATION ${WORK_DIR}/src)
# The compiler that built the libraries: a static library built by clang needs clang's OpenMP runtime.
run(${CMAKE_COMMAND} -S ${WORK_DIR}/src -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)

# custom_model: a few steps of its kind through the installed trainer's command line, with the report
# page, then sampled back
string(REPEAT "the cat sat on the mat; the dog sat on the log.\n" 40 text)
file(WRITE ${WORK_DIR}/text.txt "${text}")
run(${WORK_DIR}/build/custom_model train --model learned_scale --data text.txt --steps 3 --batch 4 --block 8 --n-embd 8
    --out run.safetensors --report run.html)
foreach(made run.safetensors run.html)
  if(NOT EXISTS ${WORK_DIR}/${made})
    message(FATAL_ERROR "package consumer: custom_model train wrote no ${made}")
  endif()
endforeach()
run(${WORK_DIR}/build/custom_model generate run.safetensors --chars 20 --seed 1)
