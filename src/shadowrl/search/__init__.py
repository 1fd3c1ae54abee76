"""Semantic code search over a workspace: chunk by syntax, embed offline, rank by cosine.

Read `index.py` first; `chunking.py` says what a hit is, `embedders.py` how text
becomes a vector, `workspace.py` how a sandbox becomes `{path: text}`.
"""

from shadowrl.search.chunking import Chunk, ChunkConfig, chunk_file
from shadowrl.search.config import SearchConfig
from shadowrl.search.embedders import EMBEDDERS, Embedder, get_embedder
from shadowrl.search.index import SearchHit, SemanticIndex, build_or_load_index, index_cache_key
from shadowrl.search.workspace import changed_texts, directory_texts, sandbox_texts

__all__ = [
    "EMBEDDERS",
    "Chunk",
    "ChunkConfig",
    "Embedder",
    "SearchConfig",
    "SearchHit",
    "SemanticIndex",
    "build_or_load_index",
    "changed_texts",
    "chunk_file",
    "directory_texts",
    "get_embedder",
    "index_cache_key",
    "sandbox_texts",
]
