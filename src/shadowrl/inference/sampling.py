"""Token selection for a batch of sequences that each have their own sampling settings.

Pure functions over logits, with no host round trip and no data-dependent Python
branch, so one step can be captured in a CUDA graph. Every row carries its own
temperature, top-k, top-p, seed and counter (tokens drawn so far); its random number
is a hash of (seed, counter), so a seeded request draws the same tokens whether it runs
alone or inside any batch, and nothing stateful (a `torch.Generator`) needs to live in
the graph. The returned logprob is the one RL needs: the log-probability of the chosen
token under the distribution it was actually drawn from (after temperature, top-k and
top-p), or under the plain softmax for greedy rows; `top_alternatives` reads the most
likely tokens off that same distribution, only for the steps that ask for them, and
`select_with_entropy` adds that distribution's entropy (the branch signal of tree
rollouts: `rl/tree.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

_MASK32 = 0xFFFFFFFF


@dataclass(frozen=True)
class BatchSampling:
    """Per-row sampling settings as tensors on the logits' device.

    `sampled` and `filtered` are host-side facts about the rows (any temperature > 0,
    any top-k/top-p), so choosing the code path never reads a tensor back.
    """

    temperature: Tensor  # [B] float32, 0 = greedy
    top_k: Tensor  # [B] int64, 0 = off
    top_p: Tensor  # [B] float32, 1 = off
    seed: Tensor  # [B] int64, >= 0
    counter: Tensor  # [B] int64, tokens this request has drawn so far
    sampled: bool = True
    filtered: bool = True


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
    # rank 0 is exempt: a top_p that rounds to 0 in float32 (1e-222) would drop every token
    outside = (mass_before >= top_p[:, None]) & (ranks[None, :] > 0)
    sorted_logits = sorted_logits.masked_fill(outside, float("-inf"))
    return torch.empty_like(logits).scatter_(-1, order, sorted_logits)


def sampling_logprobs(logits: Tensor, params: BatchSampling) -> Tensor:
    """Log-probabilities [B, V] of the distribution each row samples from."""
    temperature = params.temperature.clamp_min(1e-6)[:, None]
    scaled = logits.float() / temperature
    if params.filtered:
        scaled = filter_top_k_top_p(scaled, params.top_k, params.top_p)
    return scaled.log_softmax(dim=-1)


def _mul32(x: Tensor, c: int) -> Tensor:
    """(x * c) mod 2**32 for x in [0, 2**32), in 16-bit halves so int64 never overflows."""
    return (x * (c & 0xFFFF) + (((x * (c >> 16)) & 0xFFFF) << 16)) & _MASK32


def _mix32(x: Tensor) -> Tensor:
    """A 32-bit integer hash with full avalanche (Wellons' lowbias32)."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def uniform(seed: Tensor, counter: Tensor) -> Tensor:
    """One float64 in (0, 1) per row, a pure function of (seed, counter) [B] int64."""
    key = _mix32(_mix32(_mix32(seed & _MASK32) ^ (seed >> 32)) ^ (counter & _MASK32))
    low = _mix32(key ^ 0x9E3779B9)
    bits = (key << 21) | (low >> 11)  # 53 random bits
    return (bits.double() + 0.5) * 2.0**-53


def sample_rows(logp: Tensor, u: Tensor) -> Tensor:
    """Inverse-CDF draw per row: the first token whose cumulative probability exceeds u.

    logp [B, V], u [B] in (0, 1). Scaled by each row's total so rounding never runs off
    the end; `right=True` never lands on a zero-probability (filtered) token.
    """
    cdf = logp.exp().double().cumsum(dim=-1)
    target = (u * cdf[:, -1])[:, None]
    ids = torch.searchsorted(cdf, target, right=True)[:, 0]
    return ids.clamp_max(logp.shape[-1] - 1)


def select_tokens(logits: Tensor, params: BatchSampling) -> tuple[Tensor, Tensor]:
    """Pick one token per row; return (token ids [B], their logprobs [B])."""
    ids, chosen, _ = _select(logits, params)
    return ids, chosen


def select_with_entropy(logits: Tensor, params: BatchSampling) -> tuple[Tensor, Tensor, Tensor]:
    """`select_tokens` plus each row's entropy [B] (nats, float32) of the distribution its
    logprob is under: after temperature, top-k and top-p for sampled rows, the plain
    softmax for greedy ones. One exp and one sum over logits already in hand."""
    ids, chosen, dist = _select(logits, params)
    return ids, chosen, entropy(dist)


def entropy(logp: Tensor) -> Tensor:
    """-sum p log p per row of log-probabilities [B, V]; filtered (-inf) tokens add 0
    (clamped to a finite log, they meet p = 0). Three passes: exp, clamp, a fused dot."""
    finite = logp.clamp_min(torch.finfo(logp.dtype).min)
    return -torch.linalg.vecdot(logp.exp(), finite)


def _select(logits: Tensor, params: BatchSampling) -> tuple[Tensor, Tensor, Tensor]:
    """(token ids [B], their logprobs [B], the log-distribution [B, V] they are under)."""
    logits = logits.float()
    plain = logits.log_softmax(dim=-1)
    greedy_ids = logits.argmax(dim=-1)
    if not params.sampled:
        return greedy_ids, plain.gather(-1, greedy_ids[:, None])[:, 0], plain
    logp = sampling_logprobs(logits, params)
    sampled_ids = sample_rows(logp, uniform(params.seed, params.counter))
    greedy = params.temperature <= 0
    ids = torch.where(greedy, greedy_ids, sampled_ids)
    dist = torch.where(greedy[:, None], plain, logp)
    return ids, dist.gather(-1, ids[:, None])[:, 0], dist


def token_distribution(logits: Tensor, params: BatchSampling) -> Tensor:
    """Log-probabilities [B, V] each row's token is drawn from, as `select_tokens` draws it."""
    plain = logits.float().log_softmax(dim=-1)
    if not params.sampled:
        return plain
    greedy = (params.temperature <= 0)[:, None]
    return torch.where(greedy, plain, sampling_logprobs(logits.float(), params))


def top_alternatives(logits: Tensor, params: BatchSampling, k: int) -> tuple[Tensor, Tensor]:
    """The k most likely tokens of each row's distribution: (ids [B, k], logprobs [B, k])."""
    values, ids = token_distribution(logits, params).topk(k, dim=-1)
    return ids, values
