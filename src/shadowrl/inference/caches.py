"""The one place a KV cache layout is picked (`engine.kv`) and built for an engine."""

from __future__ import annotations

from torch import Tensor

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.kv import ContiguousKV, KVCache, Shape
from shadowrl.inference.paged import PagedKV

LAYOUTS: dict[str, type[ContiguousKV] | type[PagedKV]] = {
    "contiguous": ContiguousKV,
    "paged": PagedKV,
}


def build_kv(shape: Shape, config: EngineConfig, param: Tensor, *, graphs: bool) -> KVCache:
    """The cache `config.kv` names, for a model of `shape` on `param`'s dtype and device."""
    return LAYOUTS[config.kv].for_engine(shape, config, param, graphs=graphs)
