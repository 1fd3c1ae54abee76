"""The one engine builder: every caller makes its `Engine` here, so MTP heads follow one rule.

Commands, the pipeline's evals, RL (in this process and on Ray engine actors), replay
and MTP distillation all call `build_engine`; the draft heads an engine gets are, in
order: the ones the caller owns (an RL run's trained heads, copied: the engine casts
its own), else `engine.speculative.heads`, else `mtp.safetensors` beside `checkpoint`;
none when `engine.speculative.k` is 0 (the engine then does not speculate:
`speculation.py`).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.drafts import heads_beside
from shadowrl.inference.engine import Engine

if TYPE_CHECKING:
    from shadowrl.inference.mtp import MTPHeads


def draft_heads(config: EngineConfig, checkpoint: str | Path | None = None) -> MTPHeads | None:
    """The heads `config` names, else those saved beside `checkpoint`; None if neither
    (or k = 0; then nothing of MTP is imported). A named path that does not exist is a
    FileNotFoundError."""
    spec = config.speculative
    if spec.k == 0 or not (spec.heads or heads_beside(checkpoint)):
        return None
    from shadowrl.inference.mtp import load_heads

    if not spec.heads:
        assert checkpoint is not None
        return load_heads(checkpoint)
    if not Path(spec.heads).exists():
        raise FileNotFoundError(f"engine.speculative.heads: {spec.heads} does not exist")
    return load_heads(spec.heads)


def build_engine(
    model: Any,
    tokenizer: Any,
    config: EngineConfig | None = None,
    *,
    heads: MTPHeads | None = None,
    checkpoint: str | Path | None = None,
    version: int = 0,
    seed: int | None = None,
) -> Engine:
    """An engine (not started: `with` it, or `.start()`) over `model`, its tokens stamped
    `version`; `heads` as the module docstring orders them."""
    config = config or EngineConfig()
    served = copy.deepcopy(heads) if heads is not None else draft_heads(config, checkpoint)
    return Engine(model, tokenizer, config, version=version, seed=seed, heads=served)
