# examples/custom_model registers its model as a kind of the registry; through the library's code paths
# it then trains with nn::Trainer, saves, resumes exactly and loads for sampling:
#
#   cmake -DCUSTOM_MODEL=... -DGENERATE=... -DHEATMAP=... -DWORK_DIR=dir -P custom_model_kind.cmake
#
# 8 steps straight, and 4 + 4 with a checkpoint between (--until, then --resume): the two checkpoints must
# be byte-identical (weights, AdamW's moments, generators, step). The checkpoint then loads and samples.
# generate and heatmap, which do not register the kind, refuse its checkpoint naming the kinds they know.
cmake_minimum_required(VERSION 3.19)
foreach(var CUSTOM_MODEL GENERATE HEATMAP WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "custom_model_kind.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# Runs a program; sets <prefix>_out and <prefix>_err, fails unless it exits with `expected`.
function(run prefix expected)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " shown "${ARGN}")
  if(NOT code EQUAL expected)
    message(FATAL_ERROR "${shown} exited with ${code}, not ${expected}\n${out}\n${err}")
  endif()
  message(STATUS "${shown}\n${out}${err}")
  set(${prefix}_out "${out}" PARENT_SCOPE)
  set(${prefix}_err "${err}" PARENT_SCOPE)
endfunction()

set(straight "${WORK_DIR}/straight.safetensors")
set(split "${WORK_DIR}/split.safetensors")
run(a 0 "${CUSTOM_MODEL}" --out "${straight}" --steps 8)
if(NOT a_out MATCHES "learned_scale model, step 8, saved to")
  message(FATAL_ERROR "the straight run did not say it saved a learned_scale model at step 8:\n${a_out}")
endif()
run(b 0 "${CUSTOM_MODEL}" --out "${split}" --steps 8 --until 4)
if(NOT b_out MATCHES "step 4, saved")
  message(FATAL_ERROR "the first half did not stop at step 4:\n${b_out}")
endif()
run(c 0 "${CUSTOM_MODEL}" --resume "${split}")
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${straight}" "${split}" RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "4 + 4 resumed steps did not save the same bytes as 8 straight steps")
endif()
file(STRINGS "${straight}" kind_line REGEX "\"model\\.kind\":\"learned_scale\"" LIMIT_COUNT 1)
if(NOT kind_line)
  message(FATAL_ERROR "the checkpoint does not name its kind learned_scale")
endif()

run(d 0 "${CUSTOM_MODEL}" --generate "${straight}")
string(LENGTH "${d_out}" sampled)
if(sampled LESS 150)
  message(FATAL_ERROR "--generate printed ${sampled} characters, not a 200-character sample:\n${d_out}")
endif()

set(known "unknown kind 'learned_scale' \\(bigram, average, head, multihead, gpt\\)")
run(e 1 "${GENERATE}" "${straight}")
run(f 1 "${HEATMAP}" --checkpoint "${straight}" --prompt ab)
foreach(err IN ITEMS "${e_err}" "${f_err}")
  if(NOT err MATCHES "${known}")
    message(FATAL_ERROR "a program without the kind did not refuse it naming the kinds it knows:\n${err}")
  endif()
endforeach()
