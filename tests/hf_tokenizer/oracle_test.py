"""nn::HfTokenizer against an independent implementation: transformers.js's tokenizers (the npm package
@lenml/tokenizers, run by node), on tokenizer.json files this script makes by training BPE merges on the
first 60,000 characters of tiny Shakespeare, in the two kinds small Llama-family models ship:

  byte_level     SmolLM's pipeline: Digits (individual) then ByteLevel (GPT-2's split), 600 merges,
                 <|endoftext|> and <|im_start|> added (special)
  split_regex    Qwen2's kind: a Split regex (Isolated) then ByteLevel without its own split, same merges
  sentencepiece  TinyLlama's (Llama 2's): Prepend "▁" + Replace " " -> "▁", byte fallback, unk, fused,
                 600 merges, <s> </s> <unk> added
  metaspace      the same with Metaspace (prepend_scheme first) instead of the normalizer, and in the decoder

Each encodes the next 20,000 characters of tiny Shakespeare with digits, accented letters, CJK, emoji,
tabs, runs of spaces and added tokens mixed in; tinygpt's ids (tests/hf_tokenizer/hf_tokenize) must equal the
oracle's, id for id, and decoding them must give the oracle's text (byte-level: the text itself).

  python3 oracle_test.py --hf-tokenize BIN --oracle tokenizers_js_ids.js --npm NPM_DIR --text FILE --work DIR

Exits 77 (skipped) without node, the package or the text.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys

SPACE = "\u2581"
MERGES = 600


def bytes_to_unicode():
    bs = [b for b in range(256) if ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def train(words, merges_wanted):
    """Merges learned from {tuple of symbols: count}: the most frequent adjacent pair each round (ties to the
    smallest pair), as any BPE trainer; only their validity matters to the test."""
    merges = []
    words = dict(words)
    for _ in range(merges_wanted):
        pairs = collections.Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[a, b] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        merged = {}
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + n
        words = merged
    return merges


def added(i, content):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
            "special": True}


def byte_level(training, split_regex):
    stand_in = bytes_to_unicode()
    pattern = r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"""
    words = collections.Counter(tuple(stand_in[b] for b in w.encode()) for w in re.findall(pattern, training))
    merges = train(words, MERGES)
    vocab = {"<|endoftext|>": 0}
    for b in range(256):
        vocab[stand_in[b]] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    byte_level_split = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": not split_regex}
    if split_regex:  # Qwen2's pattern
        first = {"type": "Split", "pattern": {"Regex": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""},
                 "behavior": "Isolated", "invert": False}
    else:  # SmolLM's
        first = {"type": "Digits", "individual_digits": True}
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [added(0, "<|endoftext|>"), added(len(vocab), "<|im_start|>")],
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [first, byte_level_split]},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}}


def sentencepiece(training):
    normalized = SPACE + training.replace(" ", SPACE)
    words = collections.Counter(tuple(w) for w in re.findall(f"{SPACE}?[^{SPACE}]+|{SPACE}", normalized))
    merges = [(a, b) for a, b in train(words, MERGES) if not set(a + b) & set("\u00e9\u4f60")]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for ch in sorted(set(normalized) - set("\u00e9\u4f60")):  # (some characters only by their byte tokens)
        vocab.setdefault(ch, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
            "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SPACE},
                                                              {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
            "pre_tokenizer": None,
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                        {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                               "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": SPACE}, "content": " "}, {"type": "ByteFallback"},
                {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                      "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}}


def metaspace(tokenizer):
    """Llama 2's newer form (legacy false): no normalizer, the pre-tokenizer Metaspace putting "▁" before the
    text's first section only, the decoder Metaspace."""
    space = {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first", "split": False}
    # (add_prefix_space in the decoder: transformers.js strips the first token's space only with it; the
    # tokenizers library, and tinygpt, by prepend_scheme)
    decoder = {"type": "Sequence", "decoders": [dict(space, add_prefix_space=True), {"type": "ByteFallback"}, {"type": "Fuse"}]}
    return dict(tokenizer, normalizer=None, pre_tokenizer=space, decoder=decoder)


def test_text(shakespeare, special):
    extra = ("In 1603, 42 players\tand   7 ships; caf\u00e9 na\u00efve \u00c6sir, \u4f60\u597d\u4e16\u754c, "
             "\U0001F600 ok!\n\n  two  spaces, 3.14159 and 1,000,000 \u0661\u0662 \u00bd.\n")
    parts = shakespeare.split("\n\n")
    out = []
    for i, p in enumerate(parts):
        out.append(p)
        if i % 7 == 3:
            out.append(extra)
        if i % 11 == 5:
            out.append(special[i % len(special)] + "Then")
    return "\n\n".join(out) + extra


def main():
    p = argparse.ArgumentParser()
    for flag in ("--hf-tokenize", "--oracle", "--npm", "--text", "--work"):
        p.add_argument(flag, required=True)
    o = p.parse_args()
    package = os.path.join(o.npm, "node_modules", "@lenml", "tokenizers", "package.json")
    if not shutil.which("node") or not os.path.isfile(package) or not os.path.isfile(o.text):
        print(f"SKIPPED: needs node, {package} (npm install --prefix NPM_DIR @lenml/tokenizers@3.7.2) and {o.text}")
        sys.exit(77)
    with open(o.text, encoding="utf-8") as f:
        shakespeare = f.read()
    training, testing = shakespeare[:60000], shakespeare[60000:80000]
    shutil.rmtree(o.work, ignore_errors=True)
    os.makedirs(o.work)
    for name, tokenizer, special in (("byte_level", byte_level(training, False), ["<|endoftext|>", "<|im_start|>"]),
                                     ("split_regex", byte_level(training, True), ["<|endoftext|>", "<|im_start|>"]),
                                     ("sentencepiece", sentencepiece(training), ["<s>", "</s>"]),
                                     ("metaspace", metaspace(sentencepiece(training)), ["<s>", "</s>"])):
        path, text_path = os.path.join(o.work, f"{name}.json"), os.path.join(o.work, f"{name}.txt")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(tokenizer, f, ensure_ascii=False)
        text = test_text(testing, special)
        with open(text_path, "w", encoding="utf-8") as f:
            f.write(text)
        ours, theirs = os.path.join(o.work, f"{name}.ours"), os.path.join(o.work, f"{name}.oracle")
        for command in ([o.hf_tokenize, path, text_path, ours], ["node", o.oracle, o.npm, path, text_path, theirs]):
            r = subprocess.run(command, capture_output=True, text=True)
            if r.returncode != 0:
                raise AssertionError(f"{' '.join(command)} exited {r.returncode}: {r.stderr}")
        a, b = open(ours).read().split(), open(theirs).read().split()
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        if a != b:
            raise AssertionError(f"{name}: tinygpt's {len(a)} ids differ from the oracle's {len(b)} at id {first}: "
                                 f"{a[max(0, first - 3):first + 5]} against {b[max(0, first - 3):first + 5]}")
        ours_text, theirs_text = (open(x + ".text", encoding="utf-8").read() for x in (ours, theirs))
        if ours_text != theirs_text or (name in ("byte_level", "split_regex") and ours_text != text):
            first = next((i for i, (x, y) in enumerate(zip(ours_text, theirs_text)) if x != y), None)
            raise AssertionError(f"{name}: decoded, tinygpt's text differs from the oracle's at character {first}: "
                                 f"{ours_text[first:first + 30]!r} against {theirs_text[first:first + 30]!r}")
        print(f"{name}: {len(a)} ids of {len(text)} characters ({len(tokenizer['model']['merges'])} merges), "
              "equal to transformers.js's, and decoded")
    print("hf_tokenizer_oracle: passed")


if __name__ == "__main__":
    main()
