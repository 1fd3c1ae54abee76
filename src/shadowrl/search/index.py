"""An immutable embedding index of one workspace, cheap to fork and to cache.

Every rollout in a GRPO group starts from the same prepared snapshot, so the
snapshot's index is built once (or loaded from disk, keyed by a hash of the
files) and each fork derives its own with `updated()`, which re-embeds only the
files that fork changed and shares every other vector. Search is one matrix-
vector product over unit rows, i.e. cosine similarity, which is fast enough for
the tens of thousands of chunks a repository has.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from shadowrl.atomic import write_file
from shadowrl.search.chunking import Chunk, ChunkConfig, chunk_file, is_line_chunked
from shadowrl.search.embedders import Embedder, get_embedder

_FORMAT = 1  # bump when chunking or the file layout changes, so old caches are ignored


@dataclass(frozen=True)
class SearchHit:
    """One ranked result; lines are 1-based and inclusive."""

    path: str
    start_line: int
    end_line: int
    symbol: str
    score: float
    text: str


@dataclass(frozen=True)
class _FileEntry:
    """The chunks of one file, their unit vectors [n, dim], and the hash of the text."""

    digest: str
    chunks: tuple[Chunk, ...]
    vectors: np.ndarray


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _embedding_text(chunk: Chunk) -> str:
    # The path and qualified name carry meaning the body may not (e.g. a method's class).
    return f"{chunk.path} {chunk.symbol}\n{chunk.text}"


def _embed_files(
    files: Mapping[str, str], embedder: Embedder, config: ChunkConfig
) -> dict[str, _FileEntry]:
    """Chunk every file, embed all chunks in one batched call, and split the rows back per file."""
    chunked = {path: chunk_file(path, text, config) for path, text in files.items()}
    texts = [_embedding_text(c) for chunks in chunked.values() for c in chunks]
    vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), np.float32)
    entries, row = {}, 0
    for path, chunks in chunked.items():
        entries[path] = _FileEntry(
            _digest(files[path]), tuple(chunks), vectors[row : row + len(chunks)]
        )
        row += len(chunks)
    return entries


class SemanticIndex:
    """Chunks of a workspace and their embeddings; never mutated after construction."""

    def __init__(
        self, entries: Mapping[str, _FileEntry], embedder: Embedder, config: ChunkConfig
    ) -> None:
        self.embedder = embedder
        self.config = config
        self._entries = dict(sorted(entries.items()))
        self._chunks = [c for e in self._entries.values() for c in e.chunks]
        rows = [e.vectors for e in self._entries.values()]
        self._matrix = np.concatenate(rows) if rows else np.zeros((0, embedder.dim), np.float32)

    @classmethod
    def build(
        cls, files: Mapping[str, str], embedder: Embedder, config: ChunkConfig | None = None
    ) -> SemanticIndex:
        """Index `files` (workspace-relative path -> text)."""
        config = config or ChunkConfig()
        return cls(_embed_files(files, embedder, config), embedder, config)

    def updated(self, changed: Mapping[str, str | None]) -> SemanticIndex:
        """A new index where `changed` files (None = deleted) replace this one's; the rest is shared.

        Files whose text is identical to what is indexed are not re-embedded, so passing
        a superset of the changed files (e.g. everything a fork touched) costs nothing.
        """
        entries = dict(self._entries)
        fresh: dict[str, str] = {}
        for path, text in changed.items():
            if text is None:
                entries.pop(path, None)
            elif path not in entries or entries[path].digest != _digest(text):
                fresh[path] = text
        entries.update(_embed_files(fresh, self.embedder, self.config))
        return SemanticIndex(entries, self.embedder, self.config)

    def search(self, query: str, k: int = 5) -> list[SearchHit]:
        """The `k` chunks most similar to `query`, best first."""
        if k <= 0 or not self._chunks:
            return []
        scores = self._matrix @ self.embedder.embed([query])[0]  # [n_chunks]
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        ranked = sorted(top.tolist(), key=lambda i: (-scores[i], i))
        return [self._hit(i, float(scores[i])) for i in ranked]

    def _hit(self, i: int, score: float) -> SearchHit:
        c = self._chunks[i]
        return SearchHit(c.path, c.start_line, c.end_line, c.symbol, score, c.text)

    @property
    def paths(self) -> list[str]:
        """Indexed files, sorted (including ones that yielded no chunks)."""
        return list(self._entries)

    @property
    def unparsed(self) -> list[str]:
        """Python files that did not parse and were indexed as line windows instead."""
        return [
            p
            for p, e in self._entries.items()
            if p.endswith((".py", ".pyi")) and is_line_chunked(e.chunks)
        ]

    def __len__(self) -> int:
        return len(self._chunks)

    def save(self, path: str | Path) -> None:
        """Write one `.npz` file, atomically, so concurrent builders of one cache key are safe."""
        meta = {
            "format": _FORMAT,
            "embedder": self.embedder.name,
            "dim": self.embedder.dim,
            "config": self.config.model_dump(),
            "files": [
                [p, e.digest, [[c.start_line, c.end_line, c.symbol, c.text] for c in e.chunks]]
                for p, e in self._entries.items()
            ],
        }
        buffer = io.BytesIO()
        np.savez(
            buffer, vectors=self._matrix, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8)
        )
        write_file(path, buffer.getvalue())

    @classmethod
    def load(cls, path: str | Path, embedder: Embedder | None = None) -> SemanticIndex:
        """Read an index written by `save`; the embedder defaults to the one it was built with."""
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes())
            matrix = data["vectors"]
        if meta["format"] != _FORMAT:
            raise ValueError(f"{path}: index format {meta['format']}, expected {_FORMAT}")
        embedder = embedder or get_embedder(meta["embedder"])
        if (embedder.name, embedder.dim) != (meta["embedder"], meta["dim"]):
            raise ValueError(
                f"{path}: built with {meta['embedder']}/{meta['dim']}, not {embedder.name}"
            )
        entries, row = {}, 0
        for file_path, digest, rows in meta["files"]:
            chunks = tuple(Chunk(file_path, s, e, sym, text) for s, e, sym, text in rows)
            entries[file_path] = _FileEntry(digest, chunks, matrix[row : row + len(chunks)])
            row += len(chunks)
        return cls(entries, embedder, ChunkConfig(**meta["config"]))


def index_cache_key(files: Mapping[str, str], salt: str = "") -> str:
    """Content hash of a workspace (order-independent), optionally salted with build settings."""
    h = hashlib.sha256(f"{_FORMAT}\0{salt}\0".encode())
    for path in sorted(files):
        h.update(f"{path}\0{_digest(files[path])}\0".encode())
    return h.hexdigest()[:32]


def build_or_load_index(
    files: Mapping[str, str],
    cache_dir: str | Path,
    embedder: Embedder,
    config: ChunkConfig | None = None,
) -> SemanticIndex:
    """The index of `files`, from `cache_dir` if this exact workspace was indexed before."""
    config = config or ChunkConfig()
    key = index_cache_key(files, salt=f"{embedder.name}/{embedder.dim}/{config.model_dump_json()}")
    path = Path(cache_dir) / f"{embedder.name}-{key}.npz"
    if path.exists():
        return SemanticIndex.load(path, embedder)
    index = SemanticIndex.build(files, embedder, config)
    index.save(path)
    return index
