"""tinygpt checkpoints: load() reads one of any kind as tinygpt's nn::load_trained_model does, refusing what it
refuses; save() writes one that tinygpt's programs read."""
import os
import struct

import torch

from .config import ModelConfig, check_stored
from .files import open_regular
from .models import make_model
from .safetensors import read_safetensors, write_safetensors
from .state import load_tinygpt_state, tinygpt_state
from .strings import short
from .tokenizers import checkpoint_tokenizer, tokenizer_metadata, vocab_size, vocab_unit

FORMAT = "tinygpt-checkpoint-1"
LLMC_MAGIC = 20240326  # the first int32 of llm.c's model file


def not_a_checkpoint(path):
    """What GPT-2's own weight files are, and how to read them here, for load() to say instead of loading."""
    f, _ = open_regular(path, "a safetensors file")
    with f:
        first = f.read(4)
    if len(first) == 4 and struct.unpack("<i", first)[0] == LLMC_MAGIC:
        return (f"{path}: llm.c's GPT-2 model file, not a tinygpt checkpoint: `export {path} --hf DIR` writes it as Hugging "
                f"Face's folder, which tinygpt_torch.load_hf_folder(DIR) reads")
    return None


def load(path, verify=True):
    """(model, vocab) from a tinygpt checkpoint of any kind (train --out, or save() below). The model is in
    eval mode on the CPU; vocab is the checkpoint's tokenizer: the characters in id order (a list), GPT-2's
    BPE files (BpeFiles, carried for save(); tinygpt's tokenize and generate use them), or TokenIds for a
    model trained on token ids without a tokenizer. The optimizer state in a training
    checkpoint ("train_state.*") is ignored. What tinygpt's nn::load_trained_model refuses is refused here,
    with a ValueError naming the file and the problem: read_safetensors' list, another format, a NaN or an
    infinity in any tensor, a config tinygpt would not read or build, a vocabulary that is not distinct
    characters sorted by code point (or not model.vocab tokens), sizes the stored weights do not have,
    and tensors that do not fit the model. GPT-2's own files are named, with what reads them: Hugging
    Face's model.safetensors (load_hf_folder) and llm.c's model file (export --hf, then load_hf_folder)."""
    where = str(path)
    named = not_a_checkpoint(path)
    if named:
        raise ValueError(named)
    tensors, metadata = read_safetensors(path, verify)
    # (tinygpt's gpt2 checkpoints have a wte.weight too, and their own format: nn::weights_format's rule)
    if metadata.get("format") in (None, "pt") and ("wte.weight" in tensors or "transformer.wte.weight" in tensors):
        raise ValueError(f"{where}: Hugging Face's GPT-2 weights, not a tinygpt checkpoint: "
                         f"tinygpt_torch.load_hf_folder({short(os.path.dirname(where) or '.')}) reads its folder "
                         "(with config.json beside it)")
    if "format" not in metadata:
        raise ValueError(f"{where}: not a tinygpt checkpoint (no 'format' in its metadata)")
    if metadata["format"] != FORMAT:
        raise ValueError(f"{where}: checkpoint format {short(metadata['format'])} is not '{FORMAT}'")
    for name, t in tensors.items():
        bad = (~torch.isfinite(t)).reshape(-1).nonzero()
        if len(bad):
            i = bad[0].item()
            raise ValueError(f"{where}: tensor {short(name)} holds {t.reshape(-1)[i].item()} at index {i} (shape "
                             f"{list(t.shape)}): refusing to load a non-finite weight")
    config = ModelConfig.from_metadata(metadata, where)
    vocab = checkpoint_tokenizer(metadata, where)
    weights = {k: v for k, v in tensors.items() if not k.startswith("train_state.")}
    check_stored(config, sum(float(t.numel()) for t in weights.values()), where, "its metadata")
    try:
        config.validate()
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    if vocab_size(vocab) != config.vocab:
        raise ValueError(f"{where}: the vocabulary has {vocab_size(vocab)} {vocab_unit(vocab)}, the model {config.vocab}")
    model = make_model(config)
    load_tinygpt_state(model, weights, where)
    model.eval()
    return model, vocab


def save(model, vocab, path, metadata=None):
    """Writes the model as a tinygpt checkpoint: its weights, config and vocabulary and each tensor's
    CRC32C. `vocab` is the characters in id order (sorted by code point, no repeats, as tinygpt's character
    tokenizer requires), GPT-2's BPE files (BpeFiles, read_bpe_dir), which the checkpoint keeps as
    `train --tokenizer DIR` does, or TokenIds (a model of token ids without a tokenizer): what load() gives.
    generate, heatmap, figure and gradflow read it; train --init-from CKPT starts a run from it. It holds no optimizer state, so train --resume does not take it. `metadata`:
    extra string entries to record."""
    config = model.config
    meta = dict(metadata or {})
    meta.update(config.to_metadata())
    meta["format"] = FORMAT
    meta.update(tokenizer_metadata(vocab, config.vocab))
    write_safetensors(path, tinygpt_state(model), meta)
