"""The one place a KV cache layout is picked (`engine.kv`) and built for an engine."""

from __future__ import annotations

import torch
from torch import Tensor

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.kv import ContiguousKV, KVCache, Shape
from shadowrl.inference.paged import PagedKV

LAYOUTS: dict[str, type[ContiguousKV] | type[PagedKV]] = {
    "contiguous": ContiguousKV,
    "paged": PagedKV,
}


def kv_dtype(config: EngineConfig, weights: torch.dtype) -> torch.dtype:
    """What the cache stores (`engine.kv_dtype`) for an engine serving in `weights`."""
    return weights if config.kv_dtype == "auto" else getattr(torch, config.kv_dtype)


def build_kv(shape: Shape, config: EngineConfig, param: Tensor, *, graphs: bool) -> KVCache:
    """The cache `config.kv` names, for a model of `shape` on `param`'s device, storing
    `config.kv_dtype` (default `param`'s dtype)."""
    dtype = kv_dtype(config, param.dtype)
    return LAYOUTS[config.kv].for_engine(shape, config, dtype, param.device, graphs=graphs)
