"""LoRA RL on a tiny random Llama: only adapters train, checkpoints and copies are merged
(the sync of adapters to an engine: `test_lora_sync.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from shadowrl.models import load_checkpoint
from shadowrl.rl.forward import token_logprobs
from shadowrl.rl.lora import LoRALinear
from shadowrl.rl.trainer import Trainer

from .test_trainer import cfg, groups, params, tiny

LORA = {"lora": {"enabled": True, "rank": 4, "alpha": 8.0, "target_modules": ["q_proj", "v_proj"]}}
IDS = torch.tensor([[1, 2, 3, 5, 6, 7, 8], [1, 4, 9, 9, 9, 10, 11]])


def lora_trainer(model=None) -> Trainer:
    return Trainer(model if model is not None else tiny(), cfg(**LORA, lr=1e-2))


def test_only_adapters_train_and_the_merged_policy_moves():
    base = params(tiny())
    trainer = lora_trainer()
    layers = [m for m in trainer.model.modules() if isinstance(m, LoRALinear)]
    assert len(layers) == 2 * 2  # q_proj and v_proj of both layers
    assert {id(p) for p in trainer.params} == {id(p) for m in layers for p in (m.lora_a, m.lora_b)}
    published = trainer.state_dict()  # the frozen base + the adapters (lora_sync.py)
    assert {k for k in published if ".lora_" not in k} == base.keys()
    merged = trainer.lora.merge(published)
    assert merged.keys() == base.keys()  # the base names, no lora_* entries
    assert all(torch.equal(merged[k], v) for k, v in base.items())  # B = 0
    for _ in range(2):
        trainer.train_groups(groups())
    merged = trainer.lora.merge(trainer.state_dict())
    now = params(trainer.model)
    frozen = {k: v for k, v in now.items() if ".lora_" not in k}
    assert all(torch.equal(frozen[k], base[k]) for k in base), "a base weight moved"
    moved = {k for k in base if not torch.equal(merged[k], base[k])}
    assert moved and all(k.endswith(("q_proj.weight", "v_proj.weight")) for k in moved)


def test_the_merge_scores_as_the_trainer():
    trainer = lora_trainer()
    for _ in range(2):
        trainer.train_groups(groups())
    engine = tiny(seed=7)  # another model: every weight must come from the publication
    engine.load_state_dict(trainer.lora.merge(trainer.state_dict()))
    with torch.no_grad():
        ours = token_logprobs(trainer.model.eval(), IDS)
        theirs = token_logprobs(engine.eval(), IDS)
        first = token_logprobs(tiny().eval(), IDS)
    assert float((ours - theirs).abs().max()) < 1e-5
    assert float((ours - first).abs().max()) > 1e-3  # the step changed the merged output
    copy = trainer.policy_copy()
    assert not any(isinstance(m, LoRALinear) for m in copy.modules())
    with torch.no_grad():
        assert float((token_logprobs(copy, IDS) - ours).abs().max()) < 1e-5


def test_checkpoint_holds_the_merged_model_and_resumes_the_adapters(tmp_path: Path):
    trainer = lora_trainer()
    trainer.train_groups(groups())
    ckpt = trainer.save(tmp_path)
    assert (ckpt / "lora.safetensors").exists()
    plain = load_checkpoint(ckpt)  # what Hugging Face / vLLM / eval load: the merged policy
    for k, v in trainer.lora.merge(trainer.state_dict()).items():
        assert torch.equal(plain.state_dict()[k], v), k
    again = Trainer.resume(ckpt, cfg(**LORA, lr=1e-2))
    a, b = params(trainer.model), params(again.model)
    # the base comes back as merged - (α/r)·B A: float32 rounding of one add and subtract
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-6
    m1, m2 = trainer.train_groups(groups()), again.train_groups(groups())
    assert m2["loss"] == pytest.approx(m1["loss"], rel=1e-5) and m2["version"] == 2
    x, y = trainer.lora.merge(trainer.state_dict()), again.lora.merge(again.state_dict())
    assert max(float((x[k] - y[k]).abs().max()) for k in x) < 1e-5


def test_lora_targets_must_exist():
    with pytest.raises(ValueError, match="match no nn"):
        Trainer(tiny(), cfg(lora={"enabled": True, "target_modules": ["nope"]}))
