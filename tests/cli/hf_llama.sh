#!/usr/bin/env bash
# Hugging Face Llama folders through the programs (issue 42). A tiny llama trained on token ids and exported
# with --hf samples (greedy, --json ids) and evaluates (the losses) the same from the folder as from the
# checkpoint; heatmap, head_scores and gradflow read the folder; export --llama2c from the folder and --hf
# back gives the same model.safetensors. With a tokenizer.json (written here: byte-level BPE, a few merges,
# <|endoftext|> the last id) in the folder, `tokenize` puts <|endoftext|> between two inputs, generate stops
# at config.json's eos_token_id, and train --init-from keeps the tokenizer.json and the ids in its checkpoint,
# which export --hf writes back. A broken config.json (rope_scaling, num_key_value_heads not dividing the
# heads) and a tokenizer with fewer tokens than the vocabulary are refused by name, exit 1.
#
#   hf_llama.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
for i in $(seq 150); do echo "First Citizen: we are accounted poor citizens, the patricians good. $i"; done > a.txt
for i in $(seq 50); do echo "What authority surfeits on would relieve us. $i"; done > b.txt

# A byte-level tokenizer.json: the 256 stand-in bytes (GPT-2's bytes_to_unicode), 3 merges, <|endoftext|> 259
python3 - <<'PY'
import json
bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
stand_in = {b: chr(c) for b, c in zip(bs, cs)}
vocab = {stand_in[b]: b for b in range(256)}
G = stand_in[ord(" ")]
merges = [G + " t", "h e", "i t"]
for m in merges: vocab[m.replace(" ", "")] = len(vocab)
end = {"id": len(vocab), "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
       "normalized": False, "special": True}
def tokenizer(vocab, merges, added):
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                      "merges": merges}}
json.dump(tokenizer(vocab, merges, [end]), open("tok.json", "w"), ensure_ascii=False)
small = {k: v for k, v in vocab.items() if v < 256}  # 256 tokens: fewer than the model's 260
json.dump(tokenizer(small, [], []), open("small.json", "w"), ensure_ascii=False)
PY

# tokenize with tokenizer.json: no BOS in its template, so <|endoftext|> (259) goes between the inputs, once
"$bin/tokenize" --tokenizer tok.json a.txt b.txt --out ids.bin > tokenize.txt
grep -q "<|endoftext|> 259 between the inputs" tokenize.txt || fail "tokenize: $(cat tokenize.txt)"
ends=$(perl -e 'local $/; $_ = <STDIN>; print scalar grep { $_ == 259 } unpack("v*", $_)' < ids.bin)
[ "$ends" = 1 ] || fail "ids.bin holds <|endoftext|> $ends times, not once"
python3 -c "import sys; sys.exit(0 if __import__('os').path.getsize('ids.bin') < 2 * $(cat a.txt b.txt | wc -c) else 1)" ||
  fail "ids.bin has a token per byte or more: the merges were not applied"

# a tiny llama on those ids (vocabulary 260: the largest id + 1), grouped-query and untied
"$bin/train" --model llama --n-embd 32 --n-head 4 --n-kv-head 2 --ffn-hidden 64 --n-layer 2 --block 32 --data ids.bin \
  --steps 20 --eval-iters 2 --sample 0 --unembedding untied --out ids.st > /dev/null 2>&1
"$bin/export" ids.st --hf ids_hf > export.txt 2> export_err.txt || fail "export --hf: $(cat export_err.txt)"
for f in config.json model.safetensors; do [ -f ids_hf/$f ] || fail "export --hf wrote no $f"; done
[ ! -e ids_hf/tokenizer.json ] || fail "export --hf wrote a tokenizer.json for a model without one"
grep -q '"num_key_value_heads": 2' ids_hf/config.json || fail "config.json: $(cat ids_hf/config.json)"
grep -q '"tie_word_embeddings": false' ids_hf/config.json || fail "config.json is not untied"

greedy() { "$bin/generate" "$@" --prompt "40 41 42" --temperature 0 --tokens 40 --json 2> /dev/null | tail -1 |
  grep -o '"ids":\[[0-9,]*\]'; }
[ -n "$(greedy ids.st)" ] || fail "generate gave no ids"
[ "$(greedy ids.st)" = "$(greedy ids_hf)" ] || fail "generate from the folder: $(greedy ids_hf), not $(greedy ids.st)"
loss_of() { "$bin/evaluate" "$1" --data ids.bin --batch 2 --block 32 --batches 3 --json 2> /dev/null | grep -o '"loss":[^,]*'; }
[ -n "$(loss_of ids.st)" ] || fail "evaluate gave no loss"
[ "$(loss_of ids.st)" = "$(loss_of ids_hf)" ] || fail "evaluate: the folder's $(loss_of ids_hf), not $(loss_of ids.st)"

# the inspect tools take the folder
"$bin/heatmap" ids_hf --prompt "40 41 42 43" --layer 1 --head 3 --color never > /dev/null || fail "heatmap ids_hf"
"$bin/head_scores" ids_hf --json | grep -q '"name":"layers.1.self_attn.heads.3"' || fail "head_scores ids_hf"
"$bin/gradflow" ids_hf --data ids.bin --json | grep -q '"name":"layers.0.self_attn.q_proj.weight"' || fail "gradflow ids_hf"

# llama2.c's file from the folder, and back to a folder: the same weights, byte for byte
"$bin/export" ids_hf --llama2c ids.bin2c > /dev/null
"$bin/export" ids.bin2c --hf back_hf > /dev/null 2>&1
cmp ids_hf/model.safetensors back_hf/model.safetensors || fail "folder -> llama2.c -> folder changed the weights"
[ "$(loss_of ids.bin2c)" = "$(loss_of ids.st)" ] || fail "the llama2.c file's loss $(loss_of ids.bin2c)"

# with the tokenizer.json in the folder and <|endoftext|> as eos_token_id: text in, text out, and a greedy
# sample stops at eos (it was trained to write 259 after b.txt's text)
cp -r ids_hf tok_hf && cp tok.json tok_hf/tokenizer.json
python3 - <<'PY'
import json
c = json.load(open("tok_hf/config.json")); c["eos_token_id"] = 259; c["bos_token_id"] = 259
json.dump(c, open("tok_hf/config.json", "w"), indent=2)
PY
out=$("$bin/generate" tok_hf --prompt "First Citizen" --temperature 0 --tokens 40 --json 2> /dev/null)
[[ ${out%%$'\n'*} == "First Citizen"* ]] || fail "generate tok_hf: $out"
# train --init-from keeps the tokenizer.json and config.json's ids; export --hf writes them back
"$bin/train" --init-from tok_hf --data a.txt --steps 5 --eval-iters 1 --sample 0 --out tuned.st > /dev/null 2>&1 ||
  fail "train --init-from tok_hf"
grep -aq '"tokenizer.kind":"hf-tokenizer-json"' tuned.st || fail "tuned.st does not keep the tokenizer.json"
grep -aq '"tokenizer.hf.eos_token_id":"259"' tuned.st || fail "tuned.st does not keep eos_token_id"
"$bin/export" tuned.st --hf tuned_hf > /dev/null 2>&1
cmp tok.json tuned_hf/tokenizer.json || fail "export --hf wrote another tokenizer.json"
grep -q '"eos_token_id": 259' tuned_hf/config.json || fail "tuned_hf/config.json lost eos_token_id"
text() { "$bin/generate" "$1" --prompt "What authority" --temperature 0 --tokens 60 --json 2> /dev/null; }
[ "$(text tuned.st)" != "" ] && [ "$(text tuned.st | head -1)" = "$(text tuned_hf | head -1)" ] &&
  [ "$(text tuned.st | tail -1 | grep -o '"ids".*')" = "$(text tuned_hf | tail -1 | grep -o '"ids".*')" ] ||
  fail "tuned.st and tuned_hf sample differently: $(text tuned.st) / $(text tuned_hf)"
ids=$(text tuned_hf | tail -1 | grep -o '"ids":\[[0-9,]*\]')
if [[ $ids == *259* ]]; then [[ $ids == *,259\] ]] || fail "the sample went on past eos 259: $ids"; fi

# refused by name, exit 1, nothing read past config.json
refuse() {  # refuse WHAT EDIT MESSAGE: config.json edited by the python EDIT
  rm -rf bad && cp -r ids_hf bad
  python3 -c "import json; c = json.load(open('bad/config.json')); $2; json.dump(c, open('bad/config.json', 'w'))"
  local status=0
  "$bin/generate" bad --prompt "1 2" --tokens 3 > /dev/null 2> refused.txt || status=$?
  [ $status = 1 ] || fail "$1: generate exited $status: $(cat refused.txt)"
  grep -q "config.json" refused.txt && grep -qF -- "$3" refused.txt || fail "$1: $(cat refused.txt)"
}
refuse "rope_scaling" "c['rope_scaling'] = {'type': 'linear', 'factor': 2.0}" "rope_scaling"
refuse "num_key_value_heads 3 of 4" "c['num_key_value_heads'] = 3" "num_key_value_heads"
status=0
"$bin/generate" ids_hf --tokenizer small.json --tokens 3 > /dev/null 2> refused.txt || status=$?
[ $status = 1 ] && grep -q "small.json' has 256 tokens but the model's vocab_size is 260" refused.txt || fail "a 256-token tokenizer: $(cat refused.txt)"
echo "Hugging Face Llama folders: sampled, evaluated and inspected as the checkpoint; tokenizer.json kept; bad input refused"
