"""SFT with early stopping on 2 gloo ranks, sharded (FSDP2) and replicated, against one
rank: the ranks score the held-out demos together, every rank keeps and restores its part
of the best weights, and what they publish and save is the one-rank run's policy."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from shadowrl.rl.fsdp import policy_of
from shadowrl.rl.sft import Validation, run_sft
from shadowrl.rl.trainer import Trainer
from shadowrl.rl.weights import WeightStore

from .test_sft_validation import OTHER, TRAIN
from .test_trainer import cfg, params, tiny

# The held-out NLL of a sharded forward sums the same float32 products in another
# order: equal to 1e-5 relative. The kept weights are the step-0 weights, restored from
# clones, so they come back exactly.
REL = 1e-5


@pytest.mark.parametrize("parallel", ["fsdp", "replicate"])
def test_two_ranks_stop_keep_and_restore_as_one(tmp_path: Path, parallel: str) -> None:
    model = tiny()
    start = params(model)
    settings = {"sft_lr": 1e-2, "activation_checkpointing": False}
    one = Trainer(copy.deepcopy(model), cfg(**settings), objective="sft")
    two_cfg = cfg(**settings, world_size=2, parallel=parallel)
    two = Trainer(copy.deepcopy(model), two_cfg, objective="sft")
    try:
        check = Validation(OTHER, every=1, patience=2)
        a = run_sft(one, TRAIN, epochs=1, batch_tokens=4, validation=check)
        b = run_sft(two, TRAIN, epochs=1, batch_tokens=4, validation=check)
        assert [c.step for c in b.checks] == [c.step for c in a.checks] == [0, 1, 2]
        for ca, cb in zip(a.checks, b.checks, strict=True):
            assert cb.score.nll == pytest.approx(ca.score.nll, rel=REL)
            assert cb.score.tokens == ca.score.tokens
        assert (b.stopped, b.best_step, len(b.history)) == ("patience", 0, 2)
        # every rank restored: each writes its own part of what is published
        store = WeightStore(str(tmp_path / "w"), shard_bytes=4096)
        two.publisher(store).publish(two.state_dict(), two.version)
        published = WeightStore(str(tmp_path / "w")).fetch(two.version)
        assert all(torch.equal(published[k], start[k]) for k in published)
        saved = policy_of(two.save(tmp_path / "ckpt"), "float32")  # shards read whole
        assert all(torch.equal(v, start[k]) for k, v in saved.state_dict().items())
    finally:
        two.close()
