"""Settings of the workspace semantic-search index (the `semantic_search` tool's backend)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shadowrl.search.chunking import ChunkConfig


class SearchConfig(BaseModel):
    """Which embedder indexes a workspace, how files are chunked, and where indexes are cached."""

    model_config = ConfigDict(extra="forbid")
    embedder: Literal["minilm", "hash"] = Field(
        "minilm", description="Embedder: 'minilm' (the bundled model) or 'hash' (tests)."
    )
    chunk: ChunkConfig = Field(default_factory=ChunkConfig, description="How files are chunked.")
    top_k: int = Field(default=5, ge=1, description="Hits returned per query.")
    cache_dir: str = Field(
        default="~/.cache/shadowrl/search",
        description="Where prepared workspaces' indexes are cached.",
    )
