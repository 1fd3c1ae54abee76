"""Writing new weights into a live model, in place, so the engine never rebuilds anything.

The engine's forward reads the model's own parameters, so copying (or adding a delta)
into those tensors is the whole swap: no reallocation, no re-tracing, a pause of one
memory copy of the changed tensors.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from shadowrl.inference.drafts import DRAFTS


@dataclass(eq=False)
class Swap:
    """A queued weight update; the caller waits on `done`, then reads `pause_s`/`error`."""

    state: Mapping[str, Tensor]
    version: int
    delta: bool
    done: threading.Event = field(default_factory=threading.Event)
    pause_s: float = 0.0
    error: BaseException | None = None


def apply_state(
    tensors: Mapping[str, Tensor], state: Mapping[str, Tensor], *, delta: bool
) -> list[Tensor]:
    """Copy `state` into `tensors` (or add it when `delta`), key by key; return those written.

    `tensors` is the model's `state_dict(keep_vars=True)`. Tied weights appear under two
    names with one storage; a delta is added once per storage, never twice. Draft heads'
    tensors (`drafts.DRAFTS`) are skipped by an engine that has none.
    """
    if not any(name.startswith(DRAFTS) for name in tensors):
        state = {k: v for k, v in state.items() if not k.startswith(DRAFTS)}
    unknown = sorted(set(state) - set(tensors))
    if unknown:
        raise KeyError(f"not parameters of this model: {unknown[:5]}")
    seen: set[int] = set()
    written: list[Tensor] = []
    for name, value in state.items():
        target = tensors[name]
        if target.data_ptr() in seen:
            continue
        seen.add(target.data_ptr())
        written.append(target)
        value = value.to(device=target.device, dtype=target.dtype)
        if delta:
            target.data.add_(value)
        else:
            target.data.copy_(value)
    return written


def eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """Token ids that end a completion by default: the generation config's EOS + the tokenizer's."""
    config = model.generation_config
    eos = config.eos_token_id if config is not None else None
    ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
    if tokenizer is not None and tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return frozenset(ids)
