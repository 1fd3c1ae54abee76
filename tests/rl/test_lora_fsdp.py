"""LoRA under FSDP2 (`train.lora` with `train.parallel: fsdp`) on real gloo ranks
(spawned processes) against the same LoRA run on one plain rank."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch.distributed.tensor import DTensor

from shadowrl.commands.main import main
from shadowrl.models import load_checkpoint
from shadowrl.rl.forward import token_logprobs
from shadowrl.rl.lora import is_adapter
from shadowrl.rl.lora_sync import AdapterSync
from shadowrl.rl.trainer import Trainer
from shadowrl.rl.weights import WeightStore

from .test_fsdp import SETTINGS, worst
from .test_lora import IDS, LORA
from .test_trainer import cfg, groups, params, tiny

# As in test_fsdp.py: the 2-rank step may sum the same microbatch gradients in another
# order and clip with a norm reduced in another order, so the adapters may differ by
# float32 rounding; bound 2e-7. Measured 2026-12-03 after two AdamW steps at lr 1e-3:
# 0.0 for the adapters and for the merged weights, base + (α/r)·B A.
ATOL = 2e-7
# the engine's weights and the trainer's merged ones are the same fp32 formula on the
# same tensors (base + (α/r)·B A); the engine's logprobs vs the 1-rank trainer's: 1e-5
# (measured 9.5e-7)
LOGPROB_TOL = 1e-5


def trainers(model) -> tuple[Trainer, Trainer]:
    """The same base and the same initial adapters (Kaiming draws from the global RNG:
    seeded alike before each wrap; rank 1 takes rank 0's by broadcast)."""
    torch.manual_seed(5)
    one = Trainer(copy.deepcopy(model), cfg(**LORA, **SETTINGS))
    torch.manual_seed(5)
    two = Trainer(copy.deepcopy(model), cfg(**LORA, **SETTINGS, world_size=2, parallel="fsdp"))
    return one, two


def test_fsdp_lora_steps_as_one_rank_and_syncs_merged_weights(tmp_path: Path):
    model = tiny()
    base = params(model)
    one, two = trainers(model)
    try:
        q = two.model.model.layers[0].self_attn.q_proj
        assert isinstance(q.weight, DTensor) and isinstance(q.lora_a, DTensor)  # sharded
        assert not q.weight.requires_grad and {id(p) for p in two.params} == {
            id(p) for n, p in two.model.named_parameters() if is_adapter(n)
        }  # the optimizer holds the adapters alone
        publisher = two.publisher(WeightStore(str(tmp_path / "w")))
        assert isinstance(publisher, AdapterSync)
        assert publisher.publish(two.state_dict(), 0)["parts"] == 2  # the base, both ranks
        reader = AdapterSync(WeightStore(str(tmp_path / "w")))  # the engine's side
        assert worst(base, reader.fetch(0)) == 0.0
        for _ in range(2):
            m1, m2 = one.train_groups(groups()), two.train_groups(groups())
            assert m2["loss"] == pytest.approx(m1["loss"], rel=1e-5)
            assert m2["grad_norm"] == pytest.approx(m1["grad_norm"], rel=1e-5)
            info = publisher.publish(two.state_dict(), two.version)
            assert info["parts"] == 2  # each rank wrote its rows of the adapters
            stored = WeightStore(str(tmp_path / "w")).fetch(two.version)
            assert stored.keys() == {k for k in one.state_dict() if is_adapter(k)}
            assert worst({k: one.state_dict()[k] for k in stored}, stored) <= ATOL
            merged = one.lora.merge(one.state_dict())
            synced = reader.fetch(two.version)  # the merged targets the engine loads
            assert synced and worst({k: merged[k] for k in synced}, synced) <= ATOL
        # the base, published whole again by a fresh publisher from both ranks' shards,
        # is bit for bit the model the run started from: only adapters changed
        again = WeightStore(str(tmp_path / "again"))
        two.publisher(again).publish(two.state_dict(), two.version)
        after = again.fetch(two.version)
        assert all(torch.equal(after[k], v) for k, v in base.items())
        engine = two.policy_copy(lambda: AdapterSync(WeightStore(str(tmp_path / "w"))).whole(2))
        assert not any(isinstance(p, DTensor) for p in engine.parameters())
        assert worst(merged, dict(engine.state_dict())) <= ATOL
        with torch.no_grad():
            gap = token_logprobs(engine.eval(), IDS) - token_logprobs(one.model.eval(), IDS)
        assert float(gap.abs().max()) <= LOGPROB_TOL
        check_checkpoint(two, tmp_path, dict(engine.state_dict()))
    finally:
        two.close()


def check_checkpoint(two: Trainer, tmp_path: Path, policy: dict[str, torch.Tensor]) -> None:
    """The sharded checkpoint holds the base and adapters (+ `lora.safetensors`); its
    export is the merged policy; a reload takes the adapters back from the shards."""
    ckpt = two.save(tmp_path / "ckpt")
    assert (ckpt / "dcp").is_dir() and (ckpt / "lora.safetensors").exists()
    assert main(["export", "--checkpoint", str(ckpt), "--out", str(tmp_path / "hf")]) == 0
    exported = dict(load_checkpoint(tmp_path / "hf").state_dict())
    assert worst(policy, exported) == 0.0  # the same fp32 merge of the same tensors
    published = WeightStore(str(tmp_path / "w")).fetch(two.version)
    two.train_groups(groups())  # move the adapters, then read the checkpoint back
    two.load_state(ckpt)
    assert two.version == 2
    store = WeightStore(str(tmp_path / "reloaded"))
    two.publisher(store).publish(two.state_dict(), 2)
    back = store.fetch(2)
    assert all(torch.equal(back[k], v) for k, v in published.items())
