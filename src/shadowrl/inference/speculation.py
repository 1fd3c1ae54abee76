"""The engine's one seam to speculative decoding: built once, and read per step.

With `engine.speculative.k` = 0 (the default) the engine holds no speculator and the
speculative step, its drafters (MTP heads, n-grams) and its acceptance rules
(`spec_step.py`, `drafters.py`, `speculative.py`) are never imported.
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

# draft heads' tensor names in an engine and in a published weight state (MTP's heads,
# the one drafter with tensors, `mtp.py`)
DRAFTS = "mtp."


def build_speculator(
    decoder: Decoder,
    heads: Any,
    cache: KVCache,
    config: EngineConfig,
    tensors: MutableMapping[str, Tensor],
) -> SpeculativeStep | None:
    """`spec_step.speculator` (draft `heads`' tensors join the swappable `tensors`), or
    None without imports when `speculative.k` is 0."""
    if config.speculative.k == 0:
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
