"""Mixture-of-experts routing: record which experts each token went to, and replay them.

In a mixture of experts each layer's router sends every token to its top-k experts. The
engine (bf16, batched) and the trainer (fp32, another batch shape) compute the router's
logits with different rounding, so where two experts are nearly tied they pick different
ones, and the trainer's log π of a rollout token is then a different function from the
one that sampled it. Routing replay (R3) removes that source of mismatch: the engine
records each position's top-k expert indices per MoE layer beside its logprob, and the
trainer forces the same experts in its forward.

How the gradient behaves under replay: only *which* experts is forced. The weights that
mix the chosen experts are still the trainer's own softmax of its own router logits,
gathered at the replayed indices (renormalised over them when the config says
`norm_topk_prob`), so the router gets exactly the gradient it gets without replay (top-k
selection has none either way), through the replayed experts' gate values. The
load-balancing loss is untouched by replay and unused by shadowrl's RL objective: HF adds
it only in `ForCausalLM.forward` with `output_router_logits`, and the trainer reads the
decoder's hidden states, not that loss; were it added, HF recomputes its own top-k from
the router logits, so it would count the trainer's choices, not the replayed ones.

Works through forward hooks on HF's router modules (`Qwen3MoeTopKRouter`: returns
logits, top-k weights, top-k indices), so the engine's hand-written layer loop and HF's
own forward (the trainer's) are both covered without touching either. A model without
routers gets an empty list from `routers` and nothing is hooked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn


def routers(model: Any) -> list[nn.Module]:
    """The top-k router of each MoE layer, in layer order ([] for a dense model)."""
    inner = model.model if hasattr(model, "model") else model
    return [
        layer.mlp.gate
        for layer in inner.layers
        if hasattr(layer.mlp, "experts") and hasattr(layer.mlp, "gate")
    ]


def top_k(model: Any) -> int:
    """Experts per token (0 for a dense model)."""
    return int(getattr(model.config, "num_experts_per_tok", 0)) if routers(model) else 0


class RouteRecorder:
    """Collects the top-k indices every router returns, per layer, until `take`."""

    def __init__(self, model: Any) -> None:
        self._layers = routers(model)
        self._calls: list[list[Tensor]] = [[] for _ in self._layers]
        self._handles = [
            router.register_forward_hook(self._hook(i)) for i, router in enumerate(self._layers)
        ]

    @property
    def layers(self) -> int:
        return len(self._layers)

    def _hook(self, layer: int) -> Any:
        def hook(_module: nn.Module, _args: Any, output: tuple[Tensor, Tensor, Tensor]) -> None:
            self._calls[layer].append(output[2])

        return hook

    def take(self) -> Tensor:
        """[tokens, layers, k] int16 on the CPU: every token routed since the last take,
        in call order (the same tokens pass every layer, so the layers line up)."""
        per_layer = [torch.cat(calls) for calls in self._calls]
        self._calls = [[] for _ in self._layers]
        return torch.stack(per_layer, 1).to("cpu", torch.int16)

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()


def _forced(logits: Tensor, chosen: Tensor, forced: Tensor, normalise: bool) -> tuple[Tensor, ...]:
    """Router outputs with `forced` [N, k] indices where a row has them (>= 0), the router's
    own `chosen` elsewhere; the mixing weights come from this forward's own softmax."""
    keep = (forced >= 0).all(-1, keepdim=True)
    index = torch.where(keep, forced.to(chosen.dtype), chosen)
    weights = torch.softmax(logits, dim=-1, dtype=torch.float).gather(1, index)
    if normalise:
        weights = weights / weights.sum(-1, keepdim=True)
    return logits, weights.to(logits.dtype), index


@contextmanager
def replaying(model: Any, routes: Tensor | None) -> Iterator[None]:
    """Within the block, force each MoE layer's experts to `routes` [B, T, layers, k]
    (None: change nothing). With `rl.forward.token_logprobs`, pass it `share=False`.

    Every router call must route B x T' tokens (rows of one padded batch, positions
    0..T'-1, T' <= T): a forward over the whole batch at once. A row position whose
    indices are negative (padding, a token the engine never routed) keeps the router's
    own choice.
    """
    if routes is None:
        yield
        return
    layers, table = routers(model), routes
    if table.shape[2] != len(layers):
        raise ValueError(f"routes cover {table.shape[2]} MoE layers, the model has {len(layers)}")
    b = table.shape[0]

    def hook_for(layer: int) -> Any:
        def hook(module: nn.Module, _args: Any, output: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
            logits, _, chosen = output
            t = logits.shape[0] // b
            if t * b != logits.shape[0] or t > table.shape[1]:
                raise ValueError(f"a router call of {logits.shape[0]} tokens is not {b} rows")
            forced = table[:, :t, layer].reshape(b * t, -1).to(chosen.device)
            return _forced(logits, chosen, forced, bool(getattr(module, "norm_topk_prob", False)))

        return hook

    handles = [r.register_forward_hook(hook_for(i)) for i, r in enumerate(layers)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def flip_share(recorded: Tensor, computed: Tensor) -> float:
    """Share of (position, layer) pairs whose expert *set* differs between two routings
    of the same tokens, both [N, layers, k]."""
    a, b = recorded.sort(-1).values, computed.sort(-1).values
    return float((a != b).any(-1).float().mean()) if a.numel() else 0.0
