"""tinygpt's model ladder in PyTorch, and its checkpoints read and written without the safetensors package.

The only dependency is torch (and numpy, which torch brings; Debian 12: apt-get install python3-torch libopenblas0-pthread; without the
second, torch multiplies with the reference BLAS, many times slower). Run it with the python3 that has torch
(/usr/bin/python3 on Debian; a pyenv or venv python3 earlier on PATH may not).

    import tinygpt_torch as tg
    model, vocab = tg.load("run.safetensors")          # a tinygpt checkpoint: any kind of the ladder, any tokenizer
    ids = torch.tensor([[vocab.index(c) for c in "ROMEO:"]])
    logits = model(ids)                                 # (B, T) LongTensor -> (B, T, V) float32 logits
    tg.save(model, vocab, "tuned.safetensors")          # generate, heatmap, figure and train --init-from read it
    gpt2 = tg.load_hf_folder("gpt2")                    # Hugging Face's GPT-2 folder (config.json, model.safetensors)
    llama = tg.load_hf_llama_folder("smollm")           # a LlamaForCausalLM folder (write_hf_llama writes one)

Its files, one job each (each imports only those above it):
  strings      how numbers are written as text (C's strtof) and how messages quote what was read
  files        regular files of bounded size, JSON within bounds, atomic writes
  cli          the scripts' command lines and their rules for outputs (check_outputs, ArgumentParser)
  progress     tinygpt's progress bar, while a large file loads
  crc32c       the checksum tinygpt keeps of each tensor and of the metadata
  safetensors  read_safetensors and write_safetensors, refusing what tinygpt's loader refuses
  config       ModelConfig: a model's settings as a checkpoint stores them
  hooks        hook points: the activations TransformerLens names, for torch forward hooks
  models       the ladder (Bigram .. GPT), GPT2 (both GPTs built from the same parts) and AttentionOnly
  state        tinygpt's parameter names and layouts <-> torch's
  tokenizers   characters, GPT-2's BPE files, token ids: what a checkpoint keeps of each
  checkpoint   load and save
  hf           load_hf_folder: Hugging Face's GPT-2 folder
  llama        Llama (LlamaForCausalLM's maths: GQA, rotary halves, RMSNorm, SwiGLU) and load_hf_llama_folder
  interpret    run_with_cache, the logit lens, direct logit attribution, patching, head ablation, with forward
               hooks on the hook points (imported as tinygpt_torch.interpret, not here)
"""
from .cli import ArgumentParser, UsageError, check_outputs
from .checkpoint import FORMAT, LLMC_MAGIC, load, save
from .config import HEAD_KINDS, KINDS, ModelConfig
from .crc32c import crc32c, crc32c_bytewise
from .files import MAX_JSON_DEPTH, file_kind, open_regular, read_json, read_regular, read_text, write_atomically
from .hooks import HookPoint, hook_points
from .hf import HF_GPT2_DEFAULTS, MAX_CONFIG_BYTES, load_hf_folder
from .llama import Llama, load_hf_llama_folder, read_hf_llama_config
from .models import (LAYER_NORM_EPS, GPT, GPT2, AttentionOnly, AverageModel, Bigram, Block, Conv1D, FeedForward,
                     GPT2Attention, GPT2Block, GPT2MLP, Head, LanguageModel, MultiHead, MultiHeadAttention, Positional,
                     SingleHead, make_model)
from .progress import Progress
from .safetensors import (MAX_FILE_BYTES, MAX_HEADER_BYTES, METADATA_CHECKSUM, metadata_checksum, read_safetensors,
                          write_safetensors)
from .state import load_tinygpt_state, tinygpt_state
from .strings import one_line
from .tokenizers import BPE_KIND, TOKEN_IDS_KIND, BpeFiles, TokenIds, decode, encode, read_bpe_dir

__all__ = ["ArgumentParser", "UsageError", "check_outputs", "FORMAT", "LLMC_MAGIC", "load", "save", "HEAD_KINDS",
           "KINDS", "ModelConfig", "crc32c", "crc32c_bytewise", "MAX_JSON_DEPTH", "file_kind", "open_regular",
           "read_json", "read_regular", "read_text", "write_atomically", "HF_GPT2_DEFAULTS", "MAX_CONFIG_BYTES",
           "load_hf_folder", "HookPoint", "hook_points", "LAYER_NORM_EPS", "GPT", "GPT2", "AttentionOnly",
           "AverageModel", "Bigram", "Block", "Conv1D", "FeedForward", "GPT2Attention", "GPT2Block", "GPT2MLP", "Head",
           "LanguageModel", "MultiHead", "MultiHeadAttention", "Positional", "SingleHead", "make_model", "Progress",
           "MAX_FILE_BYTES", "MAX_HEADER_BYTES", "METADATA_CHECKSUM", "metadata_checksum", "read_safetensors",
           "write_safetensors", "load_tinygpt_state", "tinygpt_state", "one_line", "BPE_KIND", "TOKEN_IDS_KIND",
           "BpeFiles", "TokenIds", "decode", "encode", "read_bpe_dir", "Llama", "load_hf_llama_folder",
           "read_hf_llama_config"]
