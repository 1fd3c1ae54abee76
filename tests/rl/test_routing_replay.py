"""Routing replay (R3) on a tiny Qwen3-MoE: the trainer forces the rollout's experts."""

from __future__ import annotations

import contextlib
import copy
import dataclasses

import pytest
import torch

from shadowrl.agent.state import Tokens
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.routing import replaying
from shadowrl.models import random_qwen3_moe
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.forward import token_logprobs
from shadowrl.rl.routing_gap import route_rows, routing_gap
from shadowrl.rl.trainer import Trainer
from shadowrl.types import Generation, SamplingParams, Trajectory


@pytest.fixture(scope="module")
def moe() -> torch.nn.Module:
    return random_qwen3_moe(seed=0)


@pytest.fixture(scope="module")
def fp32(moe) -> tuple[list[list[int]], list[Generation]]:
    return rollouts(moe, "float32")


def rollouts(model: torch.nn.Module, dtype: str) -> tuple[list[list[int]], list[Generation]]:
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 49152, (n,), generator=g).tolist() for n in (20, 35, 50, 12)]
    sampling = SamplingParams(max_new_tokens=16, temperature=1.0)
    engine = Engine(copy.deepcopy(model), None, EngineConfig(dtype=dtype, max_batch=4))
    seeded = [dataclasses.replace(sampling, seed=i) for i in range(len(prompts))]
    return prompts, engine.generate_batch(prompts, seeded)


def batch(prompts: list[list[int]], gens: list[Generation]) -> tuple[torch.Tensor, ...]:
    """Right-padded ids [B, T] and the mask of generated tokens."""
    rows = [p + list(g.token_ids) for p, g in zip(prompts, gens, strict=True)]
    t = max(map(len, rows))
    ids = torch.tensor([r + [0] * (t - len(r)) for r in rows])
    mask = torch.zeros_like(ids, dtype=torch.bool)
    for i, (p, g) in enumerate(zip(prompts, gens, strict=True)):
        mask[i, len(p) : len(p) + len(g.token_ids)] = True
    return ids, mask


def test_replayed_batch_forward_reproduces_fp32_rollout_logprobs(moe, fp32) -> None:
    prompts, gens = fp32
    ids, mask = batch(prompts, gens)
    with torch.no_grad(), replaying(moe, route_rows(gens, moe, ids.shape[1])):
        lp = token_logprobs(moe, ids, mask, share=False)
    recorded = torch.zeros_like(lp).masked_scatter(
        mask, torch.tensor([x for g in gens for x in g.logprobs])
    )
    assert (lp - recorded).abs().max() < 1e-5
    assert routing_gap(moe, prompts, gens).flips == 0.0


def test_bf16_rollout_flips_experts_and_replay_shrinks_the_gap(moe, bf16) -> None:
    prompts, gens = bf16
    gap = routing_gap(moe, prompts, gens)  # the trainer in fp32
    assert gap.flips > 0  # bf16 router logits pick other experts somewhere
    assert gap.mismatch_replayed < gap.mismatch
    assert gap.max_mismatch_replayed < gap.max_mismatch


def test_replay_leaves_the_router_gradient_as_it_is_when_routes_agree(moe, fp32) -> None:
    """Replay forces only which experts: the mixing weights (and the router's gradient
    through them) are the trainer's own, so agreeing routes change no gradient."""
    prompts, gens = fp32
    ids, mask = batch(prompts, gens)
    routes = route_rows(gens, moe, ids.shape[1])
    model = copy.deepcopy(moe).train()
    gate = model.model.layers[0].mlp.gate.weight
    grads = []
    for replay in (False, True):
        model.zero_grad()
        with replaying(model, routes) if replay else contextlib.nullcontext():
            token_logprobs(model, ids, mask, share=not replay).sum().backward()
        assert gate.grad is not None
        grads.append(gate.grad.clone())
    assert grads[0].abs().sum() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-5)


@pytest.fixture(scope="module")
def bf16(moe) -> tuple[list[list[int]], list[Generation]]:
    return rollouts(moe, "bfloat16")


def groups_of(prompts: list[list[int]], gens: list[Generation]) -> list[list[Trajectory]]:
    """Two scored groups built the way the agent loop builds its segments."""
    trajectories = []
    for i, (prompt, gen) in enumerate(zip(prompts, gens, strict=True)):
        tokens = Tokens()
        tokens.add_context(prompt)
        tokens.add_generated(gen)
        segment = tokens.segment()
        assert len(segment.routes) == len(prompt) + len(gen.token_ids) - 1
        trajectories.append(Trajectory("t", (), (), (segment,), "submitted", reward=float(i % 2)))
    return [trajectories[:2], trajectories[2:]]


def trainer(moe: torch.nn.Module, **train: object) -> Trainer:
    config = TrainConfig.model_validate({"optimizer": {"lr": 1e-4}, **train})
    return Trainer(copy.deepcopy(moe), config)


def test_trainer_step_replays_the_routes_the_segments_carry(moe, bf16) -> None:
    groups = groups_of(*bf16)
    replayed = trainer(moe).train_groups(groups)
    own = trainer(moe, routing_replay=False).train_groups(groups)
    assert replayed["rollout_log_ratio_max_abs"] < own["rollout_log_ratio_max_abs"]
    # Checkpointed layers re-run their routers in backward: still under replay, the same
    # gradient as without checkpointing.
    checkpointed = trainer(moe, activation_checkpointing=True).train_groups(groups)
    assert checkpointed["grad_norm"] == pytest.approx(replayed["grad_norm"], rel=1e-4)
