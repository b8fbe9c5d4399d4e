"""Writes small BPE files for the tokenize tests: DIR/encoder.json with the 256 byte tokens (GPT-2's byte
characters) and "ab" = 256, and DIR/vocab.bpe with the one merge "a b"; with --endoftext, the special
token <|endoftext|> = 257 too, or with --gpt2-ids at GPT-2's 50256 (after unused two-byte tokens).

    python3 small_bpe.py DIR [--endoftext | --gpt2-ids]
"""
import json
import os
import sys

directory, special, gpt2_ids = sys.argv[1], "--endoftext" in sys.argv[2:], "--gpt2-ids" in sys.argv[2:]
printable = [b for b in range(256) if ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
char, extra = {}, 0
for b in range(256):
    char[b] = chr(b) if b in printable else chr(256 + extra)
    extra += b not in printable
vocabulary = {char[b]: b for b in range(256)}
vocabulary["ab"] = 256
if gpt2_ids:
    pairs = (char[a] + char[b] for a in range(256) for b in range(256) if char[a] + char[b] != "ab")
    while len(vocabulary) < 50256:
        vocabulary[next(pairs)] = len(vocabulary)
if special or gpt2_ids:
    vocabulary["<|endoftext|>"] = len(vocabulary)
os.makedirs(directory, exist_ok=True)
with open(os.path.join(directory, "encoder.json"), "w", encoding="utf-8") as f:
    json.dump(vocabulary, f, ensure_ascii=False)
with open(os.path.join(directory, "vocab.bpe"), "w", encoding="utf-8") as f:
    f.write("#version: 0.2\na b\n")
