"""A model's configuration as a tinygpt checkpoint stores it (nn/include/nn/model_registry.h): read, written,
checked and sized as tinygpt does, so a model tinygpt would refuse is refused here first."""
import re
from dataclasses import dataclass

from .strings import INT64_MAX, float_text, short, strtof

KINDS = ("bigram", "average", "head", "multihead", "gpt", "gpt2", "attn_only")
HEAD_KINDS = ("head", "multihead", "gpt", "gpt2")  # the kinds that read model.scaled


@dataclass
class ModelConfig:
    """nn::ModelConfig (nn/include/nn/model_registry.h): every kind stores every field."""
    kind: str = "gpt"
    vocab: int = 0
    n_embd: int = 32
    n_head: int = 4
    n_layer: int = 4
    block: int = 8
    dropout: float = 0.0
    feed_forward: bool = False  # multihead only
    gpt2_init: bool = True      # gpt only; recorded, the weights come from the file
    gelu_exact: bool = False    # gpt2 only: the erf GELU instead of GPT-2's tanh; stored for gpt2 only
    scaled: bool = True         # the kinds with heads: scores divided by sqrt(head width); stored for those only

    def to_metadata(self):
        return {"model.kind": self.kind, "model.vocab": str(self.vocab), "model.n_embd": str(self.n_embd),
                "model.n_head": str(self.n_head), "model.n_layer": str(self.n_layer), "model.block": str(self.block),
                "model.dropout": float_text(self.dropout), "model.feed_forward": "1" if self.feed_forward else "0",
                "model.gpt2_init": "1" if self.gpt2_init else "0",
                **({"model.gelu_exact": "1" if self.gelu_exact else "0"} if self.kind == "gpt2" else {}),
                **({"model.scaled": "1" if self.scaled else "0"} if self.kind in HEAD_KINDS else {})}

    @staticmethod
    def from_metadata(metadata, where="checkpoint"):
        """The config in a checkpoint's metadata, read as nn::ModelConfig::from_metadata reads it (strtoll,
        strtof): what tinygpt accepts is accepted, what it refuses is a ValueError naming `where`."""
        def field(key):
            if key not in metadata:
                raise ValueError(f"{where}: not a tinygpt checkpoint (no '{key}' in its metadata)")
            return metadata[key]

        def integer(key):
            text = field(key)
            if not re.fullmatch(r"[ \t\n\v\f\r]*[+-]?[0-9]+", text):
                raise ValueError(f"{where}: '{key}' is {short(text)}, not a whole number")
            return max(-INT64_MAX - 1, min(INT64_MAX, int(text)))  # (strtoll saturates)

        kind = field("model.kind")
        if kind not in KINDS:
            raise ValueError(f"{where}: unknown model kind {short(kind)} ({', '.join(KINDS)})")
        config = ModelConfig(kind=kind, vocab=integer("model.vocab"), n_embd=integer("model.n_embd"),
                             n_head=integer("model.n_head"), n_layer=integer("model.n_layer"), block=integer("model.block"))
        config.dropout = strtof(field("model.dropout"), "model.dropout", where)
        config.feed_forward = integer("model.feed_forward") != 0
        config.gpt2_init = integer("model.gpt2_init") != 0
        config.gelu_exact = "model.gelu_exact" in metadata and integer("model.gelu_exact") != 0  # absent: tanh
        config.scaled = "model.scaled" not in metadata or integer("model.scaled") != 0  # absent: the divisor
        return config

    def parameters(self):
        """nn::model_size(config).parameters: how many weights a model of this config has."""
        V, C, T = float(self.vocab), float(self.n_embd), float(self.block)
        L = float(max(self.n_layer, 1))
        embeddings, lm_head = V * C + T * C, C * V + V
        attention, feed_forward = 4 * C * C + C, 8 * C * C + 5 * C
        return {"bigram": V * V, "average": embeddings + lm_head, "head": embeddings + 3 * C * C + lm_head,
                "multihead": embeddings + attention + (feed_forward if self.feed_forward else 0) + lm_head,
                "gpt": embeddings + L * (4 * C + attention + feed_forward) + 2 * C + lm_head,
                "gpt2": embeddings + L * (12 * C * C + 13 * C) + 2 * C,  # (tied: no lm_head)
                "attn_only": embeddings + L * attention + lm_head}[self.kind]

    def validate(self):
        """nn::validate_model_config's checks, so a model tinygpt would refuse is refused here first."""
        if self.kind not in KINDS:
            raise ValueError(f"model: unknown kind '{self.kind}' ({', '.join(KINDS)})")
        if self.vocab <= 0:
            raise ValueError(f"model: vocab must be positive, got {self.vocab}")
        if self.kind != "bigram" and (self.n_embd <= 0 or self.block <= 0):
            raise ValueError(f"model: n_embd ({self.n_embd}) and block ({self.block}) must be positive")
        if self.kind in ("multihead", "gpt", "gpt2", "attn_only") and (self.n_head <= 0 or self.n_embd % self.n_head != 0):
            raise ValueError(f"model: n_head {self.n_head} must divide n_embd {self.n_embd}")
        if self.kind in ("gpt", "gpt2", "attn_only") and self.n_layer <= 0:
            raise ValueError(f"model: n_layer must be positive, got {self.n_layer}")
        if self.kind in ("gpt", "gpt2") and not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"model: dropout {self.dropout} must be in [0, 1)")
        if self.feed_forward and self.kind != "multihead":
            raise ValueError(f"model: feed_forward applies to multihead only, not {self.kind}")
        if not self.scaled and self.kind not in HEAD_KINDS:
            raise ValueError(f"model: dropping the divisor (scaled false) applies to {', '.join(HEAD_KINDS)} only, not {self.kind}")


def check_stored(config, stored, where, source):
    """Before a model is built: one with more than twice the `stored` weights of the file `where` (+ 4096)
    is refused, so the sizes in `source` cannot allocate what the file does not hold."""
    if config.kind in KINDS and config.parameters() > 2 * stored + 4096:
        raise ValueError(f"{where}: the model in {source} ({config.kind} n_embd {config.n_embd} n_layer "
                         f"{config.n_layer} block {config.block} vocab {config.vocab}) needs about "
                         f"{config.parameters():.3g} parameters, but the file stores {stored:.3g}")
