"""The engine's one seam to speculative decoding: built once, and read per step.

With `engine.speculative.k` = 0, or MTP drafts (the default) and no draft heads, the
engine holds no speculator, and the speculative step, its drafters (MTP heads, n-grams),
its acceptance rules and the heads' module (`spec_step.py`, `drafters.py`,
`speculative.py`, `mtp.py`) are never imported.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from torch import Tensor

from shadowrl.inference.config import EngineConfig

if TYPE_CHECKING:
    from shadowrl.inference.forward import Decoder
    from shadowrl.inference.kv import KVCache
    from shadowrl.inference.spec_step import SpeculativeStep


def build_speculator(
    decoder: Decoder,
    heads: Any,
    cache: KVCache,
    config: EngineConfig,
    tensors: MutableMapping[str, Tensor],
) -> SpeculativeStep | None:
    """`spec_step.speculator` (draft `heads`' tensors join the swappable `tensors`), or
    None, importing nothing, when `speculative.k` is 0 or MTP drafts have no heads."""
    spec = config.speculative
    if spec.k == 0 or (spec.drafter == "mtp" and heads is None):
        return None
    from shadowrl.inference.spec_step import speculator

    return speculator(decoder, heads, cache, config, tensors)


class EngineAcceptance:
    """What an engine's speculative steps accepted since the last read, per draft position:
    `spec_accept_j` = P(draft j accepted) over its steps, `spec_tau` = tokens per step."""

    def __init__(self, speculator: SpeculativeStep | None) -> None:
        self.speculator = speculator
        self.seen = list(speculator.accepted) if speculator is not None else []

    def read(self) -> dict[str, float]:
        if self.speculator is None:
            return {}
        now = list(self.speculator.accepted)
        hist = [a - b for a, b in zip(now, self.seen, strict=True)]
        self.seen, steps = now, sum(hist)
        if not steps:
            return {"spec_steps": 0.0}
        out = {"spec_steps": float(steps),
               "spec_tau": sum((n + 1) * c for n, c in enumerate(hist)) / steps}  # fmt: skip
        for j in range(1, len(hist)):
            out[f"spec_accept_{j}"] = sum(hist[j:]) / steps
        return out
