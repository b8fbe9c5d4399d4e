# train -> --until -> --resume through the command line gives the same final figures as a straight run.
#
#   cmake -DTRAIN=path/to/train -DWORK_DIR=dir -P resume_roundtrip.cmake
#
# A GPT with dropout (so the dropout generator must resume too), warmup and cosine decay, trained 20
# steps straight, and 10 + 10 with a checkpoint between. Both evaluate at step 10 (--eval-every 10), so
# their CSV logs have the same rows. The JSON train_loss and val_loss must be equal as printed
# (6 decimals, from bit-identical weights), and so must the CSV logs apart from tokens/s. The resumed run
# has no --out: it saves back to the checkpoint it resumed, which must end byte-identical to the straight
# run's (each run in a folder of its own, its log beside its checkpoint under the same name: the
# checkpoint keeps the log's path, relative to itself). The resumed run names no evaluation, sample or log
# flag: the checkpoint keeps the first run's (--eval-every 10 --eval-iters 2 --sample 0, the defaults would
# evaluate with 200 batches and sample; --csv, the resumed run would log nowhere).
#
# Then the finished run is extended with a larger --steps (to 25: the schedule is recomputed over the
# new total), and an --until at or before the checkpoint's step is refused.
cmake_minimum_required(VERSION 3.19)
foreach(var TRAIN WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "resume_roundtrip.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(run_args --model gpt --n-embd 16 --n-head 2 --n-layer 1 --block 8 --batch 8 --dropout 0.1 --lr 3e-3 --warmup 3
             --steps 20 --seed 5)
set(eval_args --eval-every 10 --eval-iters 2 --sample 0 --json)

# Runs train with the given arguments; sets <prefix>_out to its stdout, fails on a non-zero exit.
function(run_train prefix)
  execute_process(COMMAND "${TRAIN}" ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " shown "${ARGN}")
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "train ${shown} exited with ${code}\n${out}\n${err}")
  endif()
  message(STATUS "train ${shown}\n${out}")
  set(${prefix}_out "${out}" PARENT_SCOPE)
endfunction()

# The CSV without its last column (tokens/s, a timing).
function(read_csv_without_timing path var)
  file(STRINGS "${path}" lines)
  set(kept "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ",[^,]*$" "" line "${line}")
    string(APPEND kept "${line}\n")
  endforeach()
  set(${var} "${kept}" PARENT_SCOPE)
endfunction()

file(MAKE_DIRECTORY "${WORK_DIR}/straight" "${WORK_DIR}/split")
run_train(straight ${run_args} ${eval_args} --csv "${WORK_DIR}/straight/run.csv" --out "${WORK_DIR}/straight/run.safetensors")
run_train(first ${run_args} ${eval_args} --csv "${WORK_DIR}/split/run.csv" --until 10 --out "${WORK_DIR}/split/run.safetensors")
if(NOT EXISTS "${WORK_DIR}/split/run.safetensors")
  message(FATAL_ERROR "--out ${WORK_DIR}/split/run.safetensors was not written")
endif()
string(JSON first_steps GET "${first_out}" steps)
if(NOT first_steps EQUAL 10)
  message(FATAL_ERROR "--until 10 stopped at step ${first_steps}")
endif()
run_train(resumed --resume "${WORK_DIR}/split/run.safetensors" --json)

file(SHA256 "${WORK_DIR}/straight/run.safetensors" straight_sha)
file(SHA256 "${WORK_DIR}/split/run.safetensors" resumed_sha)
if(NOT straight_sha STREQUAL resumed_sha)
  message(FATAL_ERROR "--resume without --out did not save the run back to its checkpoint as the straight run saved it")
endif()

foreach(key steps train_loss val_loss params model)
  string(JSON straight_value GET "${straight_out}" ${key})
  string(JSON resumed_value GET "${resumed_out}" ${key})
  if(NOT straight_value STREQUAL resumed_value)
    message(FATAL_ERROR "${key}: straight run ${straight_value}, resumed run ${resumed_value}")
  endif()
endforeach()

read_csv_without_timing("${WORK_DIR}/straight/run.csv" straight_csv)
read_csv_without_timing("${WORK_DIR}/split/run.csv" split_csv)
if(NOT straight_csv STREQUAL split_csv)
  message(FATAL_ERROR "the CSV logs differ:\nstraight:\n${straight_csv}\nsplit:\n${split_csv}")
endif()
string(REGEX MATCHALL "\n" rows "${straight_csv}")
list(LENGTH rows n_rows)
if(NOT n_rows EQUAL 22)
  message(FATAL_ERROR "expected a header and 21 rows (steps 0 to 20: --log-every's default for 10 steps between evaluations) in the CSV:\n${straight_csv}")
endif()

run_train(extended --resume "${WORK_DIR}/split/run.safetensors" --steps 25 --json --out "${WORK_DIR}/extended.safetensors" --csv none)
string(JSON extended_steps GET "${extended_out}" steps)
if(NOT extended_steps EQUAL 25)
  message(FATAL_ERROR "--resume with --steps 25 stopped at step ${extended_steps}")
endif()

execute_process(COMMAND "${TRAIN}" --resume "${WORK_DIR}/split/run.safetensors" --until 20
  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 1 OR NOT err MATCHES "train: --until 20: stopping after step 20 trains nothing: the run is at step 20")
  message(FATAL_ERROR "--until 20 on a checkpoint at step 20: exit ${code}, expected 1 and a refusal\n${err}")
endif()
execute_process(COMMAND "${TRAIN}" --resume "${WORK_DIR}/split/run.safetensors" --steps 15
  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 1 OR NOT err MATCHES "train: --steps 15: the run has 20 steps; it can be extended, not shortened to 15")
  message(FATAL_ERROR "--steps 15 on a run of 20: exit ${code}, expected 1 and a refusal\n${err}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "the resumed run ends with the same figures as the straight run; --steps extends it; a past --until is refused")
