"""The tokenizers a tinygpt checkpoint holds, as its metadata keeps them: characters (a list, in id order),
GPT-2's byte-level BPE (BpeFiles, carried, not run: tinygpt's tokenize and generate use it), or token ids
alone (TokenIds)."""
import json
import os
import re
from dataclasses import dataclass

import torch

from .files import MAX_JSON_DEPTH, json_nesting, read_json, read_regular
from .safetensors import MAX_HEADER_BYTES
from .strings import one_line, short

BPE_KIND = "gpt2-bpe"  # a checkpoint's "tokenizer.kind" for GPT-2's BPE (nn/tokenizers/src/bpe.cpp)
TOKEN_IDS_KIND = "token-ids"  # and for token ids without a tokenizer (nn/tokenizers/src/tokenizer.cpp)


@dataclass
class BpeFiles:
    """GPT-2's byte-level BPE as a tinygpt checkpoint keeps it: the texts of its vocabulary (token -> id,
    JSON) and of its merges, and the number of tokens. Only carried here; tinygpt's BpeTokenizer reads them."""
    vocabulary: str
    merges: str
    size: int


@dataclass
class TokenIds:
    """The tokenizer of a model trained on token ids alone (train --data FILE.bin without --tokenizer): ids
    0..size-1, read and written as numbers."""
    size: int


def bpe_files(table, vocabulary, merges, where):
    """BpeFiles of a parsed vocabulary `table` and the texts; a ValueError naming `where` when the table is
    not a JSON object giving the ids 0..n-1 to its tokens, each once (tinygpt checks the rest on loading)."""
    if not isinstance(table, dict) or not table or any(type(i) is not int for i in table.values()) \
            or sorted(table.values()) != list(range(len(table))):
        raise ValueError(f"{where}: the vocabulary is not a JSON object giving the ids 0..n-1 to its tokens, each once")
    return BpeFiles(vocabulary, merges, len(table))


def read_bpe_dir(directory):
    """BpeFiles from a directory holding Hugging Face's vocab.json + merges.txt or OpenAI's encoder.json +
    vocab.bpe (the pairs tinygpt's --tokenizer DIR takes). The vocabulary must be a JSON object giving the ids
    0..n-1 once each; tinygpt checks the rest (the byte tokens, the merges) when it loads the checkpoint. A
    ValueError names the file; each must be a regular file of at most MAX_HEADER_BYTES (the checkpoint's
    header keeps them), the vocabulary nested at most MAX_JSON_DEPTH deep (read_json)."""
    for vocabulary, merges in (("encoder.json", "vocab.bpe"), ("vocab.json", "merges.txt")):
        paths = [os.path.join(directory, vocabulary), os.path.join(directory, merges)]
        if all(os.path.isfile(p) for p in paths):
            break
    else:
        raise ValueError(f"{directory} holds neither encoder.json + vocab.bpe nor vocab.json + merges.txt (GPT-2's BPE files)")
    table, vocabulary = read_json(paths[0], "a BPE vocabulary", MAX_HEADER_BYTES)
    try:
        merges = read_regular(paths[1], "a BPE merges file", MAX_HEADER_BYTES).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{paths[1]} is not UTF-8 text ({e})") from None
    return bpe_files(table, vocabulary, merges, paths[0])


def encode(vocab, text):
    """Token ids of `text` (a LongTensor) for a character vocabulary; a character outside it is an error
    naming it. GPT-2's BPE (BpeFiles) and token ids alone (TokenIds) are not encoded here: tinygpt's
    `tokenize` writes a token file of a text."""
    if isinstance(vocab, (BpeFiles, TokenIds)):
        what = "GPT-2's BPE" if isinstance(vocab, BpeFiles) else "token ids alone"
        raise ValueError(f"encode: the tokenizer is {what}, which only tinygpt encodes (tokenize writes a token file)")
    index = {c: i for i, c in enumerate(vocab)}
    unknown = sorted(set(text) - set(index))
    if unknown:
        raise ValueError(f"encode: {len(unknown)} characters not in the vocabulary of {len(vocab)}: {unknown[:10]}")
    return torch.tensor([index[c] for c in text], dtype=torch.long)


def decode(vocab, ids):
    return "".join(vocab[i] for i in ids)


def checkpoint_tokenizer(metadata, where):
    """The tokenizer a checkpoint's metadata holds, as nn::checkpoint_tokenizer reads it: GPT-2's BPE
    (BpeFiles), token ids alone (TokenIds), or characters (a list)."""
    kind = metadata.get("tokenizer.kind")
    if kind == BPE_KIND:
        if "tokenizer.bpe.vocabulary" not in metadata or "tokenizer.bpe.merges" not in metadata:
            raise ValueError(f"{where}: the metadata lacks tokenizer.bpe.vocabulary or tokenizer.bpe.merges")
        text = metadata["tokenizer.bpe.vocabulary"]
        depth = json_nesting(text.encode("utf-8"))
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"{where}: the BPE vocabulary nests {depth} deep, over the limit of {MAX_JSON_DEPTH}")
        try:
            table = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{where}: the BPE vocabulary is not JSON ({one_line(e)})") from None
        return bpe_files(table, text, metadata["tokenizer.bpe.merges"], f"{where}: the BPE vocabulary")
    if kind == TOKEN_IDS_KIND:
        size = metadata.get("tokenizer.vocab_size", "")
        if not re.fullmatch(r"[1-9][0-9]{0,17}", size):
            raise ValueError(f"{where}: tokenizer.vocab_size is {short(size)}, not a positive whole number")
        return TokenIds(int(size))
    if "tokenizer.vocabulary" not in metadata:
        raise ValueError(f"{where}: not a tinygpt checkpoint (no 'tokenizer.vocabulary' in its metadata)")
    vocab = list(metadata["tokenizer.vocabulary"])
    if not vocab:
        raise ValueError(f"{where}: the vocabulary is empty")
    for i in range(1, len(vocab)):
        if not vocab[i - 1] < vocab[i]:
            raise ValueError(f"{where}: the vocabulary must be sorted without repeats, but entry {i} "
                             f"{ascii(vocab[i])} follows {ascii(vocab[i - 1])}")
    return vocab


def vocab_size(vocab):
    return vocab.size if isinstance(vocab, (BpeFiles, TokenIds)) else len(vocab)


def vocab_unit(vocab):
    return "tokens" if isinstance(vocab, (BpeFiles, TokenIds)) else "characters"


def tokenizer_metadata(vocab, n_vocab):
    """The metadata entries that keep `vocab` in a checkpoint of a model of n_vocab tokens (what
    checkpoint_tokenizer reads back), or a ValueError when tinygpt could not read it: another size, or
    characters that are not single, sorted by code point and distinct."""
    if isinstance(vocab, (BpeFiles, TokenIds)):
        if vocab.size != n_vocab:
            raise ValueError(f"save: the vocabulary has {vocab.size} tokens, the model {n_vocab}")
        if isinstance(vocab, BpeFiles):
            return {"tokenizer.kind": BPE_KIND, "tokenizer.bpe.vocabulary": vocab.vocabulary,
                    "tokenizer.bpe.merges": vocab.merges}
        return {"tokenizer.kind": TOKEN_IDS_KIND, "tokenizer.vocab_size": str(vocab.size)}
    vocab = list(vocab)
    if len(vocab) != n_vocab:
        raise ValueError(f"save: the vocabulary has {len(vocab)} characters, the model {n_vocab}")
    if any(len(c) != 1 for c in vocab) or vocab != sorted(set(vocab)):
        raise ValueError("save: the vocabulary must be single characters sorted by code point without repeats")
    return {"tokenizer.vocabulary": "".join(vocab)}
