# train --init-from: a fresh run from a checkpoint's weights, and what it refuses.
#
#   cmake -DTRAIN=path/to/train -DGENERATE=path/to/generate -DEVALUATE=path/to/evaluate -DWORK_DIR=dir -P init_from.cmake
#
# A multihead model trained 30 steps is the start. A run --init-from it with a learning rate too small to
# move a float32 weight (1e-20, no weight decay) must end with the same weights: generate samples the same
# text from both checkpoints with one seed (a fresh model would not). The run is fresh: 2 steps of its own,
# not 32. A shorter --block crops the window (the positions' first rows, as nanoGPT's crop_block_size):
# for a multihead and a gpt2 model, evaluate gives the cropped run's checkpoint exactly the start's loss on
# windows of the new length. Then the refusals: a flag that sets the model's kind or sizes (exit 2), --resume beside it
# (exit 2), --dropout for a model without dropout (exit 2), text with characters outside the checkpoint's
# vocabulary (exit 1, naming the character, the vocabulary's size and both files).
cmake_minimum_required(VERSION 3.19)
foreach(var TRAIN GENERATE EVALUATE WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "init_from.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
string(REPEAT "the cat sat on the mat; the dog sat on the log.\n" 20 text)
file(WRITE "${WORK_DIR}/text.txt" "${text}")
file(WRITE "${WORK_DIR}/other.txt" "${text}Zebra!\n")
set(quiet --eval-iters 1 --sample 0)

# expect(code regex args...): train exits with `code` and its stdout + stderr match `regex`.
function(expect code regex)
  execute_process(COMMAND "${TRAIN}" ${ARGN} RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " shown "${ARGN}")
  if(NOT got STREQUAL code OR NOT "${out}${err}" MATCHES "${regex}")
    message(FATAL_ERROR "train ${shown}: expected exit ${code} and '${regex}', got ${got}\n${out}\n${err}")
  endif()
  message(STATUS "train ${shown}: ${got}\n${out}${err}")
endfunction()
function(sample ckpt var)
  execute_process(COMMAND "${GENERATE}" "${ckpt}" --chars 80 --seed 3 RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT got EQUAL 0)
    message(FATAL_ERROR "generate ${ckpt}: exit ${got}\n${err}")
  endif()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

expect(0 "\"steps\":30" --model multihead --n-embd 16 --n-head 2 --block 8 --steps 30 --lr 1e-2 --data "${WORK_DIR}/text.txt"
       --out "${WORK_DIR}/start.st" --json ${quiet})
expect(0 "\"steps\":2,.*starting from [^\n]*start.st" --init-from "${WORK_DIR}/start.st" --data "${WORK_DIR}/text.txt" --steps 2
       --lr 1e-20 --weight-decay 0 --batch 4 --out "${WORK_DIR}/again.st" --json ${quiet})
sample("${WORK_DIR}/start.st" start_text)
sample("${WORK_DIR}/again.st" again_text)
if(NOT start_text STREQUAL again_text)
  message(FATAL_ERROR "--init-from did not start from the checkpoint's weights: generate samples\n${start_text}\nand\n${again_text}")
endif()
# the same run from a fresh model samples other text: the comparison above can fail
expect(0 "\"steps\":2," --model multihead --n-embd 16 --n-head 2 --block 8 --data "${WORK_DIR}/text.txt" --steps 2
       --lr 1e-20 --weight-decay 0 --batch 4 --out "${WORK_DIR}/fresh.st" --json ${quiet})
sample("${WORK_DIR}/fresh.st" fresh_text)
if(start_text STREQUAL fresh_text)
  message(FATAL_ERROR "a fresh model samples the same text as the trained one:\n${fresh_text}")
endif()

# evaluate(ckpt var): the checkpoint's loss on windows of 4, as evaluate's JSON line
function(evaluate ckpt var)
  execute_process(COMMAND "${EVALUATE}" "${ckpt}" --data "${WORK_DIR}/text.txt" --batch 2 --block 4 --json
                  RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT got EQUAL 0)
    message(FATAL_ERROR "evaluate ${ckpt}: exit ${got}\n${err}")
  endif()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()
expect(0 "\"steps\":30" --model gpt2 --n-embd 16 --n-head 2 --n-layer 1 --block 8 --steps 30 --lr 1e-2
       --data "${WORK_DIR}/text.txt" --out "${WORK_DIR}/start2.st" --json ${quiet})
foreach(start start start2)
  expect(0 "\"steps\":2," --init-from "${WORK_DIR}/${start}.st" --block 4 --data "${WORK_DIR}/text.txt" --steps 2
         --lr 1e-20 --weight-decay 0 --batch 4 --out "${WORK_DIR}/${start}_cropped.st" --json ${quiet})
  evaluate("${WORK_DIR}/${start}.st" start_loss)
  evaluate("${WORK_DIR}/${start}_cropped.st" cropped_loss)
  if(NOT start_loss STREQUAL cropped_loss)
    message(FATAL_ERROR "--init-from ${start}.st --block 4 did not keep the checkpoint's weights: on windows of 4, "
                        "${start_loss} before and ${cropped_loss} after")
  endif()
endforeach()

set(usage "; see --help\n$")
expect(2 "^train: --n-embd cannot change a model started --init-from: the checkpoint fixes its kind and sizes${usage}"
       --init-from "${WORK_DIR}/start.st" --n-embd 32)
expect(2 "^train: --block 16 is longer than the --init-from checkpoint's window 8: it may only shorten it${usage}"
       --init-from "${WORK_DIR}/start.st" --block 16 --data "${WORK_DIR}/text.txt")
expect(2 "^train: --model cannot change a model started --init-from" --init-from "${WORK_DIR}/start.st" --model gpt)
expect(2 "^train: --init-from starts a new run and --resume continues one: give one of them${usage}"
       --init-from "${WORK_DIR}/start.st" --resume "${WORK_DIR}/again.st")
expect(2 "^train: --dropout does not apply to the --init-from checkpoint's model multihead${usage}"
       --init-from "${WORK_DIR}/start.st" --dropout 0.1 --data "${WORK_DIR}/text.txt")
expect(1 "--init-from [^ ]*start.st: the text to train on \\([^ ]*other.txt\\) has characters outside the checkpoint's vocabulary: encode: 4 characters are not in the vocabulary of 16: 'Z' \\(U\\+005A\\), 'b'"
       --init-from "${WORK_DIR}/start.st" --data "${WORK_DIR}/other.txt" --out "${WORK_DIR}/refused.st")
if(EXISTS "${WORK_DIR}/refused.st")
  message(FATAL_ERROR "a refused --init-from run wrote its --out")
endif()
