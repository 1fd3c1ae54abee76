"""How far the trainer's mixture of experts strays from the rollout's, with and without
routing replay, on the same tokens.

The engine samples and records routes (`Generation.routes`); here the trainer's model
teacher-forces the same prompt + completion twice, once letting its routers choose and
once replaying the recorded experts (`inference/routing.py`), and reports the share of
(position, layer) routings that flip and the train-vs-rollout logprob gap of each. Used
by the tests and `benchmarks/moe_replay.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from shadowrl.inference import RouteRecorder, flip_share, replaying, routers
from shadowrl.rl.forward import token_logprobs
from shadowrl.types import Generation


@dataclass(frozen=True)
class RoutingGap:
    """Trainer vs rollout on `tokens` generated tokens (`positions` routed positions)."""

    tokens: int
    positions: int
    flips: float  # share of (position, MoE layer) pairs whose expert set differs
    flipped_positions: float  # share of positions with a flip in at least one layer
    mismatch: float  # mean |log π_train − log π_rollout|, the trainer routing itself
    mismatch_replayed: float  # the same with the rollout's experts replayed
    max_mismatch: float
    max_mismatch_replayed: float


def route_rows(gens: Sequence[Generation], model: Any, length: int) -> Tensor:
    """[B, length, MoE layers, k] int64 routes of each generation, -1 where none."""
    layers, k = len(routers(model)), int(model.config.num_experts_per_tok)
    out = torch.full((len(gens), length, layers, k), -1, dtype=torch.int64)
    for row, gen in enumerate(gens):
        if gen.routes:
            out[row, : len(gen.routes)] = torch.tensor(gen.routes).view(-1, layers, k)
    return out


def _one(model: Any, prompt: Sequence[int], gen: Generation) -> tuple[Tensor, ...]:
    """(|gap| without replay, |gap| with replay, recorded routes, trainer routes)."""
    ids = torch.tensor([[*prompt, *gen.token_ids]])
    mask = torch.zeros_like(ids, dtype=torch.bool)
    mask[0, len(prompt) :] = True
    recorded = torch.tensor(gen.logprobs)
    recorder = RouteRecorder(model)
    try:
        with torch.no_grad():
            own = token_logprobs(model, ids, mask)[0, len(prompt) :]
        computed = recorder.take().long()
    finally:
        recorder.close()
    routes = route_rows([gen], model, ids.shape[1])
    with torch.no_grad(), replaying(model, routes):
        replayed = token_logprobs(model, ids, mask, share=False)[0, len(prompt) :]
    rollout = routes[0, : computed.shape[0]]
    return (own - recorded).abs(), (replayed - recorded).abs(), rollout, computed


def routing_gap(
    model: Any, prompts: Sequence[Sequence[int]], gens: Sequence[Generation]
) -> RoutingGap:
    """Teacher-force each prompt + generation through `model` (the trainer's)."""
    parts = [_one(model, p, g) for p, g in zip(prompts, gens, strict=True)]
    own = torch.cat([p[0] for p in parts])
    replayed = torch.cat([p[1] for p in parts])
    rollout, computed = torch.cat([p[2] for p in parts]), torch.cat([p[3] for p in parts])
    differ = (rollout.sort(-1).values != computed.sort(-1).values).any(-1)  # [positions, layers]
    return RoutingGap(
        tokens=own.numel(),
        positions=rollout.shape[0],
        flips=flip_share(rollout, computed),
        flipped_positions=float(differ.any(-1).float().mean()),
        mismatch=float(own.mean()),
        mismatch_replayed=float(replayed.mean()),
        max_mismatch=float(own.max()),
        max_mismatch_replayed=float(replayed.max()),
    )
