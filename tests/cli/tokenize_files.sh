#!/usr/bin/env bash
# examples/tokenize and the files it is given, with small BPE files made here (no npm needed): a
# vocabulary without <|endoftext|> takes one input (two are refused: nothing to put between them); one
# with <|endoftext|> at its own id puts that id between two; and each of these is refused in one short
# line naming the file, never waiting on a named pipe: an input or an encoder.json that is a named pipe,
# a vocab.bpe or an encoder.json over the size limit (sparse, so nothing is written), a merges line of
# 1 MB holding a NUL byte and a terminal escape, an encoder.json byte that is not UTF-8.
#
#   tokenize_files.sh TOKENIZE WORK_DIR
set -euo pipefail
tokenize=$1 work=$2
small_bpe=$(cd "$(dirname "$0")" && pwd)/small_bpe.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect CODE STDERR_PATTERN COMMAND...: exit status CODE (10 s at most) and stderr matching the pattern
expect() {
  local code=$1 pattern=$2 rc=0
  shift 2
  timeout 10 "$@" >out.txt 2>err.txt || rc=$?
  [ "$rc" -eq "$code" ] || fail "$* exited $rc, expected $code: $(head -c 300 err.txt)"
  [ -z "$pattern" ] || grep -Eq -- "$pattern" err.txt || fail "$*: stderr does not match '$pattern': $(head -c 300 err.txt)"
}
# one_short_line: the last stderr is one line of printable ASCII and UTF-8, under 400 bytes
one_short_line() {
  [ "$(wc -l < err.txt)" -eq 1 ] && [ "$(wc -c < err.txt)" -lt 400 ] || fail "stderr is not one short line: $(wc -lc < err.txt)"
  ! LC_ALL=C grep -q -P '[\x00-\x08\x0b-\x1f\x7f]' err.txt || fail "stderr holds a control character: $(cat -v err.txt)"
}

python3 "$small_bpe" plain
python3 "$small_bpe" eot --endoftext
printf 'ab cab\n' > one.txt
printf 'b\n' > two.txt

# one input needs no <|endoftext|>; two do, and get the vocabulary's (257 here, not GPT-2's 50256)
expect 0 "" "$tokenize" --tokenizer plain one.txt --out one.bin
[ "$(od -An -tu2 -v one.bin | xargs)" = "256 32 99 256 10" ] || fail "one.bin holds $(od -An -tu2 -v one.bin)"
expect 1 "^tokenize: plain has no <\|endoftext\|> special token to put between the inputs$" \
  "$tokenize" --tokenizer plain one.txt two.txt --out two.bin
[ ! -e two.bin ] || fail "a refused tokenize wrote two.bin"
expect 0 "" "$tokenize" --tokenizer eot one.txt two.txt --out two.bin
[ "$(od -An -tu2 -v two.bin | xargs)" = "256 32 99 256 10 257 98 10" ] || fail "two.bin holds $(od -An -tu2 -v two.bin)"

# named pipes: refused unread (no writer ever comes; the timeout would fail a wait)
mkfifo in.fifo
expect 1 "^tokenize: 'in.fifo' is a named pipe \(FIFO\), not a text file$" "$tokenize" --tokenizer plain in.fifo --out fifo.bin
mkdir fifo_vocab && cp plain/vocab.bpe fifo_vocab/ && mkfifo fifo_vocab/encoder.json
expect 1 "^tokenize: BPE tokenizer: 'fifo_vocab/encoder.json' is a named pipe \(FIFO\), not a BPE file$" \
  "$tokenize" --tokenizer fifo_vocab one.txt --out fifo.bin

# over the size limit (32 MiB): refused by its size, before reading (both files sparse)
mkdir big_vocab big_merges
cp plain/vocab.bpe big_vocab/ && truncate -s 33554433 big_vocab/encoder.json
cp plain/encoder.json big_merges/ && truncate -s 33554433 big_merges/vocab.bpe
expect 1 "^tokenize: BPE tokenizer: 'big_vocab/encoder.json' is 33554433 bytes, over the limit of 33554432 bytes \(32 MiB\) for a BPE file$" \
  "$tokenize" --tokenizer big_vocab one.txt --out big.bin
expect 1 "'big_merges/vocab.bpe' is 33554433 bytes, over the limit" "$tokenize" --tokenizer big_merges one.txt --out big.bin

# a 1 MB merges line with a NUL byte and an escape: quoted, escaped and cut to one short line
mkdir long_line && cp plain/encoder.json long_line/
python3 -c 'open("long_line/vocab.bpe", "wb").write(b"#version: 0.2\na\x00\x1b[31m" + b"x" * 1000000 + b"\n")'
expect 1 'merges line 2 is not two tokens separated by one space: "a\\u0000\\u001b\[31mx+"\.\.\. \(1000007 bytes\)$' \
  "$tokenize" --tokenizer long_line one.txt --out long.bin
one_short_line

# a byte that is not UTF-8 in encoder.json: named with its offset, not copied
mkdir not_utf8 && cp plain/vocab.bpe not_utf8/
python3 -c 'open("not_utf8/encoder.json", "wb").write(b"{\"\xff\x1b\": 0}")'
expect 1 "'not_utf8/encoder.json' \+ 'not_utf8/vocab.bpe': the vocabulary: invalid UTF-8 at byte offset 2: byte 0xFF never appears in UTF-8" \
  "$tokenize" --tokenizer not_utf8 one.txt --out bad.bin
one_short_line
! LC_ALL=C grep -q -P '[\x80-\xff]' err.txt || fail "stderr holds a byte of the file: $(cat -v err.txt)"
echo "ok"
