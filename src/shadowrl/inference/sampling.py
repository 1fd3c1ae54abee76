"""Token selection for a batch of sequences that each have their own sampling settings.

Pure functions over logits. Every row carries its own temperature, top-k, top-p and
random generator, so a seeded request draws the same tokens whether it runs alone or
inside any batch. The returned logprob is the one RL needs: the log-probability of the
chosen token under the distribution it was actually drawn from (after temperature,
top-k and top-p), or under the plain softmax for greedy rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class BatchSampling:
    """Per-row sampling settings as tensors on the logits' device."""

    temperature: Tensor  # [B] float32, 0 = greedy
    top_k: Tensor  # [B] int64, 0 = off
    top_p: Tensor  # [B] float32, 1 = off
    generators: Sequence[torch.Generator | None]  # one per row, None for greedy rows

    @property
    def needs_filter(self) -> bool:
        return bool(((self.top_k > 0) | (self.top_p < 1.0)).any())


def filter_top_k_top_p(logits: Tensor, top_k: Tensor, top_p: Tensor) -> Tensor:
    """Set logits outside each row's top-k, then outside its top-p nucleus, to -inf.

    logits [B, V]; top_k [B] (0 = keep all); top_p [B] (1 = keep all). Top-p is applied
    to the distribution renormalised after top-k, as Hugging Face does. The most likely
    token always survives.
    """
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    ranks = torch.arange(logits.shape[-1], device=logits.device)
    k = top_k[:, None]
    drop = (k > 0) & (ranks[None, :] >= k)
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    probs = sorted_logits.softmax(dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs
    sorted_logits = sorted_logits.masked_fill(mass_before >= top_p[:, None], float("-inf"))
    return torch.empty_like(logits).scatter_(-1, order, sorted_logits)


def sampling_logprobs(logits: Tensor, params: BatchSampling) -> Tensor:
    """Log-probabilities [B, V] of the distribution each row samples from."""
    temperature = params.temperature.clamp_min(1e-6)[:, None]
    scaled = logits.float() / temperature
    if params.needs_filter:
        scaled = filter_top_k_top_p(scaled, params.top_k, params.top_p)
    return scaled.log_softmax(dim=-1)


def select_tokens(logits: Tensor, params: BatchSampling) -> tuple[Tensor, Tensor]:
    """Pick one token per row; return (token ids [B], their logprobs [B]).

    Sampling uses the Gumbel-max trick (argmax of logp - log(E), E ~ Exp(1)) so each
    row draws its noise from its own generator, independent of the rest of the batch.
    """
    logits = logits.float()
    greedy = params.temperature <= 0
    greedy_ids = logits.argmax(dim=-1)
    if bool(greedy.all()):
        return greedy_ids, logits.log_softmax(dim=-1).gather(-1, greedy_ids[:, None])[:, 0]
    logp = sampling_logprobs(logits, params)
    noise = torch.ones_like(logp)
    for row, gen in enumerate(params.generators):
        if gen is not None:
            noise[row].exponential_(generator=gen)
    sampled_ids = (logp - noise.log()).argmax(dim=-1)
    ids = torch.where(greedy, greedy_ids, sampled_ids)
    plain = logits.log_softmax(dim=-1)
    chosen = torch.where(greedy[:, None], plain, logp).gather(-1, ids[:, None])[:, 0]
    return ids, chosen
