"""The RL math: group-relative advantages, the truncated-IS policy-gradient loss, SFT's CE.

Everything here is a pure function over tensors so it can be read, tested on
hand-computed numbers, and swapped without touching the trainer. Shapes in the
docstrings: B rows (segments), T positions, G rollouts per group.

Two choices that differ from textbook GRPO, both on purpose:

* Advantages are `reward − group mean`, never divided by the group's std: dividing
  by a tiny std turns noise into huge updates and over-weights easy/hard tasks
  (Dr. GRPO, Liu et al. 2025).
* The summed token loss is divided by one constant per batch (`token_budget`), not
  by each sequence's length: every generated token weighs the same, so a long
  trajectory is not down-weighted per token relative to a short one.

Tokens sampled by an older policy (async rollouts, weights swapped mid-sequence)
are corrected with a *truncated* importance weight w = min(π_θ/π_behaviour, C),
detached, as in IMPALA's V-trace truncation and AReaL's decoupled / "TIS" loss:
the gradient is w·A·∇log π_θ, unbiased up to the truncation and bounded by C.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch
from torch import Tensor


def group_advantages(rewards: Tensor) -> Tensor:
    """rewards [..., G] -> advantages [..., G] = reward − group mean (no std division).

    A group whose rewards are all equal gets exactly 0 (not float noise), so it
    contributes no policy gradient at all.
    """
    adv = rewards - rewards.mean(dim=-1, keepdim=True)
    flat = rewards.amax(dim=-1, keepdim=True) == rewards.amin(dim=-1, keepdim=True)
    return torch.where(flat, torch.zeros_like(adv), adv)


def positive_advantages(rewards: Tensor) -> Tensor:
    """rewards [..., G] -> the positive half of `group_advantages`: max(reward − mean, 0).

    Only the attempts that beat their group are pushed up; the others get no gradient. With
    sparse binary rewards the negative half mostly pushes down the common failure (at 135M
    on the family: an edit that changes nothing), which spreads probability over other,
    mostly wrong, edits; this keeps RL's on-policy credit without that push
    (`train.loss.advantage: positive`; RAFT-style, Dong et al. 2023, within the group).
    """
    return group_advantages(rewards).clamp(min=0)


ADVANTAGES = {"centred": group_advantages, "positive": positive_advantages}


def zero_advantage_groups(rewards: Tensor) -> int:
    """rewards [N, G] -> number of groups whose rewards are all equal (no signal)."""
    return int((rewards.amax(dim=-1) == rewards.amin(dim=-1)).sum())


@dataclass(frozen=True)
class LossStats:
    """Sums and extrema of one microbatch, mergeable across microbatches with `+`.

    Kept as 0-d tensors so accumulating them never forces a device sync.
    """

    tokens: Tensor
    ratio_sum: Tensor
    ratio_max: Tensor
    ratio_min: Tensor
    clipped: Tensor
    zero_adv_rows: Tensor
    kl_sum: Tensor
    nll_sum: Tensor

    @staticmethod
    def zero() -> LossStats:
        z = torch.zeros(())
        return LossStats(z, z, torch.tensor(-torch.inf), torch.tensor(torch.inf), z, z, z, z)

    def cpu(self) -> LossStats:
        return LossStats(*(getattr(self, f.name).cpu() for f in fields(self)))

    def __add__(self, other: LossStats) -> LossStats:
        def merge(name: str) -> Tensor:
            b = getattr(other, name)
            a = getattr(self, name).to(b.device)
            if name == "ratio_max":
                return torch.maximum(a, b)
            if name == "ratio_min":
                return torch.minimum(a, b)
            return a + b

        return LossStats(*(merge(f.name) for f in fields(self)))

    def to_metrics(self) -> dict[str, float]:
        n = max(float(self.tokens), 1.0)
        out = {
            "tokens": float(self.tokens),
            "clip_frac": float(self.clipped) / n,
            "zero_adv_rows": float(self.zero_adv_rows),
            "kl": float(self.kl_sum) / n,
            "nll": float(self.nll_sum) / n,
        }
        # No ratio seen (no tokens, or an SFT step) leaves ±inf, which is not even valid JSON.
        if torch.isfinite(self.ratio_max):
            out |= {
                "ratio_mean": float(self.ratio_sum) / n,
                "ratio_max": float(self.ratio_max),
                "ratio_min": float(self.ratio_min),
            }
        return out


# k3 grows like exp(log π_ref − log π_θ): one sampled token the policy has pushed ~10 nats
# below the reference made a step's mean KL 9.9 and its gradient norm 288 in dev pilot 8.
# Capped per token, as verl's low-variance KL is; a capped token adds no gradient.
K3_MAX = 10.0


def k3_kl(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Per-token k3 estimator of KL(π_θ ‖ π_ref): r − log r − 1 with r = π_ref/π_θ,
    in [0, `K3_MAX`]."""
    log_r = ref_logprobs - logprobs
    return torch.clamp(torch.exp(log_r) - log_r - 1.0, max=K3_MAX)


def policy_loss(
    logprobs: Tensor,
    behaviour_logprobs: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    *,
    token_budget: int,
    is_clip: float = 2.0,
    ref_logprobs: Tensor | None = None,
    kl_coef: float = 0.0,
) -> tuple[Tensor, LossStats]:
    """Truncated-IS REINFORCE loss, summed over tokens and divided by `token_budget`.

    logprobs [B, T]            log π_θ(token), carries the gradient
    behaviour_logprobs [B, T]  log π of the policy that sampled the token (engine)
    advantages [B]             one advantage per row (a segment inherits its chain's)
    loss_mask [B, T]           True on generated tokens only
    ref_logprobs [B, T]        reference policy, only when kl_coef > 0

    loss = −Σ_t w_t·A·log π_θ(t) / token_budget  (+ kl_coef·Σ_t k3_t / token_budget)
    with w_t = min(exp(log π_θ − log π_behaviour), is_clip) treated as a constant.
    """
    mask = loss_mask.to(logprobs.dtype)
    log_ratio = torch.where(loss_mask, logprobs.detach() - behaviour_logprobs, 0.0)
    ratio = torch.exp(log_ratio)
    weight = torch.clamp(ratio, max=is_clip)
    per_token = -weight * advantages[:, None].to(logprobs.dtype) * logprobs
    loss = (per_token * mask).sum() / token_budget

    kl_sum = torch.zeros((), device=logprobs.device)
    if kl_coef > 0.0:
        if ref_logprobs is None:
            raise ValueError("kl_coef > 0 needs ref_logprobs")
        kl = k3_kl(logprobs, ref_logprobs) * mask
        loss = loss + kl_coef * kl.sum() / token_budget
        kl_sum = kl.detach().sum()

    ratio_m = ratio.masked_select(loss_mask)
    has_tokens = ratio_m.numel() > 0
    stats = LossStats(
        tokens=mask.sum(),
        ratio_sum=ratio_m.sum(),
        ratio_max=ratio_m.max() if has_tokens else torch.tensor(-torch.inf),
        ratio_min=ratio_m.min() if has_tokens else torch.tensor(torch.inf),
        clipped=(ratio_m > is_clip).sum().to(logprobs.dtype),
        zero_adv_rows=(advantages == 0).sum().to(logprobs.dtype),
        kl_sum=kl_sum,
        nll_sum=-(logprobs.detach() * mask).sum(),
    )
    return loss, stats


class _LinearTokenLogprobs(torch.autograd.Function):
    """log softmax(h·Wᵀ + b)[target] per row, with logits only ever one chunk at a time.

    Backward recomputes each chunk's logits instead of saving them (one more matmul,
    like Liger's fused linear cross-entropy): saved activations are O(N·D), not O(N·V).
    d lp_i / d logits_i = onehot(target_i) − softmax_i, scaled by the upstream grad g_i.
    """

    @staticmethod
    def forward(
        ctx: Any, hidden: Tensor, weight: Tensor, bias: Tensor | None, targets: Tensor, chunk: int
    ) -> Tensor:
        out = torch.empty(hidden.shape[0], device=hidden.device, dtype=torch.float32)
        for s in range(0, hidden.shape[0], chunk):
            logits = _chunk_logits(hidden[s : s + chunk], weight, bias)
            tgt = targets[s : s + chunk, None]
            out[s : s + chunk] = (logits.gather(-1, tgt) - logits.logsumexp(-1, keepdim=True))[:, 0]
        ctx.save_for_backward(hidden, weight, bias, targets)
        ctx.chunk = chunk
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        hidden, weight, bias, targets = ctx.saved_tensors
        need_h, need_w, need_b = ctx.needs_input_grad[:3]
        grad_h = torch.empty_like(hidden) if need_h else None
        grad_w = torch.zeros_like(weight, dtype=torch.float32) if need_w else None
        grad_b = torch.zeros_like(bias, dtype=torch.float32) if need_b else None
        for s in range(0, hidden.shape[0], ctx.chunk):
            h, g = hidden[s : s + ctx.chunk], grad_out[s : s + ctx.chunk, None]
            d = torch.softmax(_chunk_logits(h, weight, bias), -1).mul_(-g)  # [n, V]
            d.scatter_add_(-1, targets[s : s + ctx.chunk, None], g.float())
            if grad_b is not None:
                grad_b += d.sum(0)
            d = d.to(weight.dtype)
            if grad_h is not None:
                grad_h[s : s + ctx.chunk] = d @ weight
            if grad_w is not None:
                grad_w.addmm_(d.T.float(), h.float())
        cast = [x.to(weight.dtype) if x is not None else None for x in (grad_w, grad_b)]
        return grad_h, cast[0], cast[1], None, None


def _chunk_logits(hidden: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    # The head runs in the weights' dtype even under `train.autocast`: bf16 logits near 20
    # are 0.125 apart, which would double the logprob error the decoder's bf16 leaves (and
    # backward recomputes these logits outside autocast, so forward and backward agree).
    with torch.autocast(hidden.device.type, enabled=False):
        return torch.nn.functional.linear(hidden.to(weight.dtype), weight, bias).float()


def linear_token_logprobs(
    hidden: Tensor,
    weight: Tensor,
    targets: Tensor,
    *,
    bias: Tensor | None = None,
    chunk: int = 1024,
) -> Tensor:
    """hidden [N, D], LM head weight [V, D], targets [N] -> log π(target_i | h_i) [N] float32.

    The LM head and log-softmax fused over `chunk` rows at a time, so neither forward
    nor backward ever holds more than one [chunk, V] float32 block of logits: the
    caller passes only the positions whose next token is trained, never [B, T, V].
    """
    return _LinearTokenLogprobs.apply(hidden, weight, bias, targets, chunk)


def sft_loss(logprobs: Tensor, loss_mask: Tensor, *, token_budget: int) -> Tensor:
    """logprobs [B, T], loss_mask [B, T] -> −Σ_masked log p / token_budget (token-mean CE)."""
    return -(logprobs * loss_mask.to(logprobs.dtype)).sum() / token_budget


def sft_stats(logprobs: Tensor, loss_mask: Tensor) -> LossStats:
    """Token count and summed NLL of one microbatch; the RL fields stay neutral."""
    z = torch.zeros((), device=logprobs.device)
    nll = -(logprobs.detach() * loss_mask.to(logprobs.dtype)).sum()
    inf = torch.tensor(torch.inf, device=logprobs.device)
    return LossStats(loss_mask.sum().to(logprobs.dtype), z, -inf, inf, z, z, z, nll)


class RolloutGap:
    """Per-token log π_θ − log π_behaviour over the trained tokens of one step: the
    train-vs-rollout mismatch (rollout precision, weights staleness) that the
    loss's truncated importance ratio corrects. On N ranks: this rank's share.
    Accumulated as 0-d tensors, read once at the end (no device sync per microbatch)."""

    def __init__(self) -> None:
        self.total, self.max_abs, self.tokens = torch.zeros(()), torch.zeros(()), torch.zeros(())

    def add(self, logprobs: Tensor, behaviour: Tensor, mask: Tensor) -> None:
        gap = torch.where(mask, logprobs.detach() - behaviour, 0.0)
        self.total = self.total.to(gap.device) + gap.sum()
        self.max_abs = torch.maximum(self.max_abs.to(gap.device), gap.abs().max())
        self.tokens = self.tokens.to(gap.device) + mask.sum()

    def to_metrics(self) -> dict[str, float]:
        tokens = float(self.tokens)
        if not tokens:
            return {}
        return {
            "rollout_log_ratio_mean": float(self.total) / tokens,
            "rollout_log_ratio_max_abs": float(self.max_abs),
        }
