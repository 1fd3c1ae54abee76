"""MTP stays behind its seams: with no draft heads, wiring a run, building its engine and
taking a trainer step import none of MTP's modules (checked in a fresh interpreter, where
nothing else has imported them yet); with heads, the one companion `build_companion` makes
re-distils them after updates and its tensors join the published state and checkpoint.
The core's modules never name MTP: what it adds to the gate and the report comes in
through `rl/contributions.py`, and nothing when it is off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

import shadowrl
from shadowrl.inference.mtp import PREFIX, for_model, heads_path
from shadowrl.models import random_llama
from shadowrl.realtime.config import RealtimeConfig
from shadowrl.rl.batch import MicroBatch, TrainBatch
from shadowrl.rl.companion import build_companion
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.contributions import build_step_checks
from shadowrl.rl.mtp_config import RLDistillConfig
from shadowrl.rl.trainer import Trainer

STEP = """
import json, sys
import torch
import shadowrl.rl.run  # the run's wiring, in this process
from shadowrl.inference.build import build_engine
from shadowrl.inference.config import EngineConfig
from shadowrl.models import random_llama
from shadowrl.rl.batch import MicroBatch, TrainBatch
from shadowrl.rl.companion import build_companion
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.trainer import Trainer

train = TrainConfig.model_validate(json.loads(sys.argv[1]))
model = random_llama(1, vocab_size=16)
companion = build_companion(train, sys.argv[2])  # no heads beside this "checkpoint"
engine = build_engine(random_llama(1, vocab_size=16), None, EngineConfig())
mask = torch.tensor([[False, True, True, True]])
mb = MicroBatch(torch.tensor([[1, 2, 3, 4]]), mask, torch.where(mask, -2.0, 0.0),
                torch.tensor([1.0]), torch.where(mask, 0, -1))
metrics = Trainer(model, train, companion=companion).step(TrainBatch([mb], token_budget=3))
loaded = sorted(m for m in sys.modules if m.startswith("shadowrl."))
print(json.dumps({"companion": companion is not None, "speculator": engine.speculator is not None,
                  "stepped": "loss" in metrics, "modules": loaded}))
"""
MTP = (
    "shadowrl.inference.mtp",
    "shadowrl.inference.spec_step",
    "shadowrl.inference.drafters",
    "shadowrl.inference.speculative",
    "shadowrl.rl.mtp_rl",
    "shadowrl.rl.mtp_distill",
    "shadowrl.rl.mtp_loss",
)


def stepped(train: dict[str, object], checkpoint: Path) -> dict[str, Any]:
    """What a fresh interpreter loaded to wire a run, build an engine and take a step."""
    out = subprocess.run(
        [sys.executable, "-c", STEP, json.dumps(train), str(checkpoint)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    assert result["stepped"]
    return result


def test_without_heads_no_mtp_module_is_imported(tmp_path: Path) -> None:
    off = stepped({}, tmp_path)  # the default: re-distil every update, but there are no heads
    assert "shadowrl.rl.run" in off["modules"] and "shadowrl.rl.companion" in off["modules"]
    assert not off["companion"] and not off["speculator"]
    assert not set(MTP) & set(off["modules"])


def _batch(vocab: int) -> TrainBatch:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, vocab, (2, 24), generator=g)
    mask = torch.zeros(2, 24, dtype=torch.bool)
    mask[:, 4:] = True
    mb = MicroBatch(ids, mask, torch.where(mask, -2.0, 0.0), torch.tensor([1.0, -1.0]),
                    torch.where(mask, 0, -1))  # fmt: skip
    return TrainBatch([mb], token_budget=int(mask.sum()))


def test_with_heads_the_companion_trains_them_and_they_travel_with_the_policy(
    tmp_path: Path,
) -> None:
    model = random_llama(1, vocab_size=16)
    train = TrainConfig(mtp=RLDistillConfig(steps=2, every=2))
    assert build_companion(train.model_copy(update={"mtp": RLDistillConfig(every=0)}),
                           heads=for_model(model, 2)) is None  # fmt: skip
    companion = build_companion(train, heads=for_model(model, 2))
    assert companion is not None
    trainer = Trainer(model, train, companion=companion)
    before = {k: v.clone() for k, v in companion.state_dict().items()}
    first, second = trainer.step(_batch(16)), trainer.step(_batch(16))
    assert "mtp_windows" not in first and second["mtp_windows"] > 0  # every 2nd update
    published = trainer.state_dict()
    assert before.keys() == {k for k in published if k.startswith(PREFIX)}
    assert any(not torch.equal(published[k], v) for k, v in before.items())
    saved = trainer.save(tmp_path)
    assert heads_path(saved).is_file()
    resumed = Trainer.resume(saved, train).companion  # found beside the checkpoint
    assert resumed is not None
    assert all(torch.equal(resumed.state_dict()[k], published[k]) for k in before)


# The core: the training loop, the engine, the real-time cycle, the gate and the reports.
CORE = (
    "rl/trainer.py", "rl/run.py", "rl/dp.py", "rl/checkpoint.py", "inference/engine.py",
    "realtime/training.py", "realtime/stages.py", "realtime/context.py", "realtime/cycle.py",
    "eval/gate.py", "eval/alarms.py",
    "pipeline/report.py", "pipeline/report_text.py", "pipeline/evaluator.py",
)  # fmt: skip


def test_the_core_modules_never_name_mtp() -> None:
    src = Path(shadowrl.__file__).parent
    named = [m for m in CORE if "mtp" in (src / m).read_text().lower()]
    assert named == [], f"MTP named in the core, not behind rl/contributions.py: {named}"


def test_with_mtp_off_no_component_adds_a_check() -> None:
    rt = RealtimeConfig(max_mtp_acceptance_drop=0.25)
    off = TrainConfig.model_validate({"mtp": {"every": 0}})
    assert build_step_checks(off, rt) == ()
    (on,) = build_step_checks(TrainConfig(), rt)  # re-distilled where there are heads
    assert (on.alarm, on.compare([0.9, 0.5], [0.6, 0.5]).limit) == ("mtp_acceptance_drop", 0.25)
