"""MTP heads re-distilled beside an FSDP2 policy (`train.mtp` with `train.parallel:
fsdp`) on real gloo ranks (spawned processes), against the same run on one plain rank."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch.distributed.tensor import DTensor

from shadowrl.inference.mtp import for_model, heads_path, load_heads
from shadowrl.models import tiny_config
from shadowrl.rl.companion import build_companion
from shadowrl.rl.trainer import Trainer
from shadowrl.rl.weights import WeightStore

from .test_fsdp import ATOL, SETTINGS, worst
from .test_trainer import VOCAB, cfg, groups

K = 2
MTP = {"mtp.every": 1, "mtp.steps": 3, "mtp.lr": 1e-3}
# The heads learn from the policy's final hidden states: on 2 ranks those come out of a
# sharded forward of a policy that already differs by float32 rounding (ATOL), and AdamW's
# normalised steps carry that rounding into the heads in proportion to the learning rate.
# Measured 2026-12-03 after two RL steps (six head steps), tied embeddings: 1.1e-6 at lr
# 1e-3, 7.0e-5 at lr 1e-2, with the heads' loss equal to 5e-7 relative at both, so the gap
# is rounding, not a different teacher. Bound at lr 1e-3: 1e-5.
HEADS_TOL = 1e-5


def tiny(tied: bool):
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_config(vocab_size=VOCAB, tie_word_embeddings=tied))


def trainer(model, heads, **kw) -> Trainer:
    train = cfg(**SETTINGS, **MTP, **kw)
    companion = build_companion(train, heads=copy.deepcopy(heads))
    return Trainer(copy.deepcopy(model), train, companion=companion)


def heads_of(t: Trainer) -> dict[str, torch.Tensor]:
    """The heads' tensors but the empty draft vocabulary (these heads draft from all)."""
    return {k: v.detach().clone() for k, v in t.companion.state_dict().items() if v.numel()}


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_fsdp_redistils_the_heads_as_one_rank_publishes_and_resumes_them(
    tmp_path: Path, tied: bool
):
    model = tiny(tied)
    heads = for_model(model, K)
    start = {k: v.clone() for k, v in heads.state_dict().items()}
    one = trainer(model, heads)
    two = trainer(model, heads, world_size=2, parallel="fsdp")
    try:
        assert isinstance(two.model.model.layers[0].mlp.up_proj.weight, DTensor)  # sharded
        for _ in range(2):
            m1, m2 = one.train_groups(groups()), two.train_groups(groups())
            assert m2["mtp_windows"] == m1["mtp_windows"] > 0
            assert m2["mtp_loss"] == pytest.approx(m1["mtp_loss"], rel=1e-4)
            assert m2["mtp_accept_1"] == m1["mtp_accept_1"]
        h1, h2 = heads_of(one), heads_of(two)
        assert worst(h1, h2) <= HEADS_TOL
        assert any(not torch.equal(v, start[k.removeprefix("mtp.")]) for k, v in h2.items())
        # published with the policy (both ranks write theirs; a gather on rank 0 alone
        # would wait for the other rank forever), the heads under their own names
        store = WeightStore(str(tmp_path / "w"))
        info = two.publisher(store).publish(two.state_dict(), two.version)
        assert info["parts"] == 2
        stored = WeightStore(str(tmp_path / "w")).fetch(two.version)
        assert all(torch.equal(stored[k], v) for k, v in h2.items())
        # the policy moved as the 1-rank one did: the heads' reads changed nothing of it
        policy = {k: v for k, v in one.state_dict().items() if not k.startswith("mtp.")}
        assert worst(policy, {k: stored[k] for k in policy}) <= ATOL

        saved = two.save(tmp_path / "checkpoints")
    finally:
        two.close()
        one.close()
    written = load_heads(heads_path(saved)).state_dict()  # mtp.safetensors, by rank 0
    assert all(torch.equal(written[k.removeprefix("mtp.")], v) for k, v in h2.items())
    resumed = Trainer.resume(saved, cfg(**SETTINGS, **MTP, world_size=2, parallel="fsdp"))
    try:
        assert resumed.companion is not None and resumed.step_count == 2
        assert worst(heads_of(resumed), h2) == 0.0
        resumed.train_groups(groups())  # and it goes on training them on both ranks
        assert worst(heads_of(resumed), h2) > 0.0
    finally:
        resumed.close()
