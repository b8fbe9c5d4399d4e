#!/usr/bin/env bash
# Errors in the user's words (issue 41, item 12): a file that is not what a program reads is named after
# the program's name, never after an internal function's ("load_safetensors: ...", "read_text_file: ...");
# text quoted from a binary file is escaped and cut, and the message goes on after it; train given a
# checkpoint as an argument says what --resume and --init-from would do with it.
#
#   plain_messages.sh BIN_DIR CHECKPOINT WORK_DIR     (BIN_DIR holds train, generate, plot_loss, evaluate, heatmap)
set -uo pipefail
bin=$1 ckpt=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failures=0
# expect NAME CODE REGEX -- PROGRAM ARGS...: exit CODE, stderr one line matching REGEX (grep -E)
expect() {
    local name=$1 code=$2 regex=$3
    shift 4
    "$@" >/dev/null 2>err.log </dev/null
    local status=$?
    if [[ $status == "$code" && $(wc -l <err.log) == 1 ]] && grep -Eq -- "$regex" err.log; then
        echo "ok   $name: $(cat err.log)"
    else
        echo "FAIL $name: exit status $status (expected $code), stderr:"
        sed 's/^/  | /' err.log
        failures=$((failures + 1))
    fi
}
printf 'step,batch_loss,train_loss,val_loss,lr,grad_norm,tokens_per_s\n0,,4.1,4.2,0.001,,\n' >run.csv
printf 'First Citizen:\n' >data.txt
internal='(load_safetensors|read_text_file|read_tokenized_text|load_module|save_safetensors|Trainer|SafetensorsReader)'

# a CSV where a checkpoint belongs: the program, then the file, then what is wrong
expect generate_csv 1 "^generate: run\.csv: " -- "$bin/generate" run.csv
expect heatmap_csv 1 "^heatmap: run\.csv: " -- "$bin/heatmap" run.csv --prompt ab
expect evaluate_csv 1 "^evaluate: run\.csv: " -- "$bin/evaluate" run.csv --data data.txt
expect train_resume_csv 1 "^train: 'run\.csv': " -- "$bin/train" --resume run.csv
expect train_init_from_csv 1 "^train: run\.csv: " -- "$bin/train" --init-from run.csv --data data.txt
grep -Eq -- "$internal" ./*.log && { echo "FAIL: an internal name: $(grep -Eh -- "$internal" ./*.log)"; failures=$((failures + 1)); }

# a checkpoint where a CSV belongs: its binary first line quoted escaped and cut, then the rest of the message
cp "$ckpt" run.st
expect plot_loss_checkpoint 1 \
    "^plot_loss: run\.st:1: the header has no 'step' column \(it is \"([^\"\\\\]|\\\\.){20,400}\"\.\.\. \([0-9]+ bytes\); \`train --csv\` writes step,batch_loss,train_loss,val_loss,lr,grad_norm,tokens_per_s\)$" -- \
    "$bin/plot_loss" run.st --out chart.svg
[[ $(wc -c <err.log) -lt 400 ]] || { echo "FAIL plot_loss_checkpoint: a line of $(wc -c <err.log) bytes"; failures=$((failures + 1)); }

# train given a checkpoint, or weights, as an argument
expect train_checkpoint_argument 2 \
    "^train: unexpected argument 'run\.st' \(a checkpoint: --resume run\.st continues its run, --init-from run\.st starts a new run from its weights\); see --help$" -- \
    "$bin/train" run.st
python3 - "$ckpt" <<'EOF' || exit 1
import json, struct, sys
# weights without training state: a safetensors file whose metadata has no train.step
src = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", src[:8])
header = json.loads(src[8:8 + n])
header["__metadata__"] = {"format": "pt"}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open("weights.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + src[8 + n:])
EOF
expect train_weights_argument 2 "^train: unexpected argument 'weights\.safetensors' \(weights: --init-from weights\.safetensors starts a run from them\); see --help$" -- \
    "$bin/train" weights.safetensors
expect train_stray_argument 2 "^train: unexpected argument 'stray'; see --help$" -- "$bin/train" stray
((failures == 0)) || { echo "$failures case(s) failed"; exit 1; }
