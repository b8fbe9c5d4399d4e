#!/usr/bin/env bash
# tokenize holds neither its text nor its ids whole: each piece's ids are written as they are encoded.
# Its peak RSS (peak_rss: the child's ru_maxrss) on a 32 MB text may exceed that on a 1 KB text by at most
# half the text's size; 61daa8c kept every id, then widened them all to int64 to write them (about 12
# bytes an id, here nearly an id a byte). No timing: only sizes. BPE files made here (no npm).
#
#   tokenize_memory.sh TOKENIZE PEAK_RSS WORK_DIR
set -euo pipefail
tokenize=$1 peak=$2 work=$3
small_bpe=$(cd "$(dirname "$0")" && pwd)/small_bpe.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 "$small_bpe" bpe --gpt2-ids  # (61daa8c took <|endoftext|> to be 50256)
# a few words over and over: encode's cache of merged words stays small
python3 -c '
words = ["ab", "cab", "abc", "bad", "dab", "c", "bb", "aab"]
line = " ".join(words[(i * 7) % len(words)] for i in range(100)) + "\n"
open("big.txt", "w").write(line * (32_000_000 // len(line)))
open("small.txt", "w").write(line * 2)'
peak_kib() {  # peak_kib INPUT: tokenize's peak RSS in KiB
  "$peak" rss.txt "$tokenize" --tokenizer bpe "$1" --out "$1.bin" --force > /dev/null 2> stderr.txt || fail "$1: $(cat stderr.txt)"
  cat rss.txt
}
small=$(peak_kib small.txt) big=$(peak_kib big.txt)
text=$(stat -c %s big.txt)
grew=$(( (big - small) * 1024 ))
echo "peak RSS $small KiB on a 1 KB text, $big KiB on a $text-byte text: +$grew bytes (limit $(( text / 2 )))"
(( grew * 2 <= text )) || fail "the peak RSS grew by $grew bytes, over half the text's $text"
[ "$(stat -c %s big.txt.bin)" -gt "$text" ] || fail "big.txt.bin is short: $(stat -c %s big.txt.bin) bytes"
echo "ok"
