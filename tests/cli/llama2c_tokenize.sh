#!/usr/bin/env bash
# tokenize with llama2.c's tokenizer.bin (a FILE where GPT-2's BPE is a DIR): each input is one document,
# BOS (1) then run.c's ids of its text (tests/data/llama2c/utf8_lines.ids: run.c's encode of each line of
# utf8_lines.txt, README.md beside them), as llama2.c's pretokenize writes them; a truncated tokenizer.bin
# is refused naming it.
#
#   llama2c_tokenize.sh TOKENIZE DATA_DIR WORK_DIR
set -euo pipefail
tokenize=$1 data=$2/llama2c work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
for n in 1 3 4; do printf '%s' "$(sed -n ${n}p "$data/utf8_lines.txt")" > line$n.txt; done
"$tokenize" --tokenizer "$data/tokenizer.bin" line1.txt line4.txt line3.txt --out ids.bin > out.txt
got=$(perl -e 'local $/; print join(" ", unpack("v*", <STDIN>))' < ids.bin)
want="1 $(sed -n 1p "$data/utf8_lines.ids") 1 $(sed -n 4p "$data/utf8_lines.ids") 1 $(sed -n 3p "$data/utf8_lines.ids")"
[ "$got" = "$want" ] || fail "tokenize gave
$got
where run.c's ids are
$want"
grep -q "BOS before each of 3 inputs" out.txt || fail "tokenize said: $(cat out.txt)"
head -c 5000 "$data/tokenizer.bin" > short.bin
if "$tokenize" --tokenizer short.bin line1.txt --out short_ids.bin 2> refused.txt; then fail "a truncated tokenizer.bin was taken"; fi
grep -q "short.bin" refused.txt || fail "the refusal does not name the file: $(cat refused.txt)"
[ ! -e short_ids.bin ] || fail "a refused tokenize wrote its --out"
echo "tokenize --tokenizer tokenizer.bin: BOS and run.c's ids for each input"
