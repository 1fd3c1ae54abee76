"""Speculative decoding with MTP draft heads, exact to the main model's own sampling.

One speculative step, for every running row at once:

    verify   the row's newest token and its k drafts run through the main model in one
             forward (`Decoder.extend`): k+1 distributions, k+1 main-model tokens
    accept   the leading drafts the rule accepts (rows accept different lengths), plus
             one token of the main model's own after them: 1..k+1 new tokens per row
    draft    the heads guess the next k tokens from the hidden state at the last
             accepted position; they are verified by the next step

Rejected positions need no rollback: their KV was written past the row's new length,
is masked from every read, and the next step overwrites it.

Acceptance rules (`SpeculativeConfig.acceptance`):
- "exact" (default): the main model samples every position j from the row's own random
  stream (`sampling.uniform(seed, counter + j)`, exactly as a plain decode step would),
  and a draft is accepted only where it equals that sample. The output is then the
  non-speculative output token for token, so a seeded request draws the same tokens
  with speculation on or off, alone or in any batch. Drafts are drawn from the heads
  with the same uniform as the sample they guess (a coupled draw): where the heads'
  distribution is near the main model's, the two inverse-CDF draws land on the same
  token, so sampled rows (temperature 1) accept about as often as greedy ones.
- "rejection": Leviathan et al. / Chen et al. speculative sampling: accept draft d with
  probability min(1, p(d)/q(d)), else draw from normalise(max(p - q, 0)). The output
  follows the main model's distribution but uses other random numbers (separately
  salted streams for drafting and accepting), so it is not the non-speculative output.
Every recorded logprob is the main model's, under the distribution the token follows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor

from shadowrl.inference.forward import Decoder
from shadowrl.inference.mtp import MTPHeads
from shadowrl.inference.sampling import (
    BatchSampling,
    sample_rows,
    select_tokens,
    select_with_entropy,
    token_distribution,
    uniform,
)

DRAFT_SALT = 0x5EED_D4AF7  # rejection sampling: drafts and acceptances use their own streams
ACCEPT_SALT = 0xACCE_9715


@dataclass(frozen=True)
class Verified:
    """A verify's result per row: tokens ids [B, T], logprobs [B, T], accepted drafts n [B],
    and the entropy [B, T] of the main model's distribution at each position (rejection
    sampling's output is distributed exactly as that distribution).

    Row b's new tokens are ids[b, :n[b] + 1].
    """

    ids: Tensor
    logprobs: Tensor
    accepted: Tensor
    entropies: Tensor


Rule = Callable[[Tensor, Tensor | None, Tensor, BatchSampling], Verified]


def shifted(params: BatchSampling, offset: Tensor | int, salt: int = 0) -> BatchSampling:
    """The same rows' settings, `offset` tokens later, on a stream salted by `salt`."""
    seed = params.seed ^ salt if salt else params.seed
    return replace(params, seed=seed, counter=params.counter + offset)


def per_position(params: BatchSampling, t: int) -> BatchSampling:
    """Rows' settings repeated for T positions each ([B*T], row-major), counters +0..T-1."""

    def rep(x: Tensor) -> Tensor:
        return x.repeat_interleave(t)

    steps = torch.arange(t, device=params.counter.device).repeat(params.counter.shape[0])
    return BatchSampling(
        temperature=rep(params.temperature),
        top_k=rep(params.top_k),
        top_p=rep(params.top_p),
        seed=rep(params.seed),
        counter=rep(params.counter) + steps,
        sampled=params.sampled,
        filtered=params.filtered,
    )


def accept_exact(
    drafts: Tensor, draft_logq: Tensor | None, logits: Tensor, params: BatchSampling
) -> Verified:
    """Accept the leading drafts equal to the main model's own samples (the default rule).

    drafts [B, k], logits [B, k+1, V]; `draft_logq` is unused.
    """
    b, t, v = logits.shape
    ids, logprobs, entropies = select_with_entropy(
        logits.reshape(b * t, v), per_position(params, t)
    )
    ids, logprobs = ids.view(b, t), logprobs.view(b, t)
    accepted = (drafts == ids[:, :-1]).long().cumprod(dim=1).sum(dim=1)
    return Verified(ids, logprobs, accepted, entropies.view(b, t))


def accept_rejection(
    drafts: Tensor, draft_logq: Tensor | None, logits: Tensor, params: BatchSampling
) -> Verified:
    """Speculative sampling: accept d w.p. min(1, p(d)/q(d)), else draw from (p - q)+.

    draft_logq [B, k, V] is the distribution each draft was drawn from. Greedy rows
    (p and q one-hot) reduce to the exact rule, which they take.
    """
    assert draft_logq is not None, "rejection sampling needs the drafts' distributions"
    b, t, v = logits.shape
    k = t - 1
    exact = accept_exact(drafts, None, logits, params)
    if not params.sampled:
        return exact
    flat = per_position(params, t)
    logp = token_distribution(logits.reshape(b * t, v), flat).view(b, t, v)
    counters = params.counter[:, None] + torch.arange(k, device=logits.device)[None]
    p_d = logp[:, :k].gather(-1, drafts[..., None])[..., 0]
    q_d = draft_logq.gather(-1, drafts[..., None])[..., 0]
    r = uniform((params.seed ^ ACCEPT_SALT)[:, None].expand(b, k), counters)
    accepted = (r.log() < (p_d - q_d)).long().cumprod(dim=1).sum(dim=1)
    residual = (logp[:, :k].exp() - draft_logq.exp()).clamp_min(0.0)
    residual = torch.where(residual.sum(-1, keepdim=True) > 0, residual, logp[:, :k].exp())
    u = uniform(flat.seed, flat.counter).view(b, t)
    fixes = sample_rows(residual.reshape(b * k, v).log(), u[:, :k].reshape(-1)).view(b, k)
    bonus = sample_rows(logp[:, k], u[:, k])
    corrections = torch.cat((fixes, bonus[:, None]), dim=1)
    steps = torch.arange(t, device=logits.device)[None]
    padded = torch.cat((drafts, bonus[:, None]), dim=1)
    ids = torch.where(steps < accepted[:, None], padded, corrections)
    logprobs = logp.gather(-1, ids[..., None])[..., 0]
    greedy = (params.temperature <= 0)[:, None]
    return Verified(
        torch.where(greedy, exact.ids, ids),
        torch.where(greedy, exact.logprobs, logprobs),
        torch.where(greedy[:, 0], exact.accepted, accepted),
        exact.entropies,
    )


RULES: dict[str, Rule] = {"exact": accept_exact, "rejection": accept_rejection}


def draft(
    heads: MTPHeads,
    decoder: Decoder,
    hidden: Tensor,
    token: Tensor,
    params: BatchSampling,
    *,
    k: int | None = None,
    salt: int = 0,
    keep_distributions: bool = False,
    rows: Tensor | None = None,
) -> tuple[Tensor, Tensor | None]:
    """k drafts per row [B, k] after `token` [B], from its position's hidden state [B, H].

    `params` are the rows' settings at the first drafted position; drafts are drawn
    like the main model's tokens (greedy rows: argmax; others: inverse CDF of the
    stream salted by `salt`) with the first `k` heads (default all), from the heads'
    draft vocabulary scored by `rows` (default `heads.draft_rows` of the LM head; the
    engine caches them per weights version). Also returns their distributions
    [B, k, V] over the full vocabulary (0 outside the draft vocabulary) if asked.
    """
    k = heads.k if k is None else k
    weight = heads.draft_rows(decoder.lm_head.weight) if rows is None else rows
    if heads.sequential:
        drafts, logits, state, tok = [], [], hidden, token
        for j in range(k):
            state = heads.step(j, state, decoder.embed(tok))
            step_logits = F.linear(state, weight)
            tok = heads.to_full(select_tokens(step_logits, shifted(params, j, salt))[0])
            drafts.append(tok)
            logits.append(step_logits)
        ids, all_logits = torch.stack(drafts, 1), torch.stack(logits, 1)
    else:  # every head reads the backbone's state: one LM-head product for all k
        all_logits = F.linear(
            torch.stack([heads.step(j, hidden, None) for j in range(k)], 1), weight
        )
        b, _, v = all_logits.shape
        flat = shifted(per_position(params, k), 0, salt)
        ids = heads.to_full(select_tokens(all_logits.reshape(b * k, v), flat)[0].view(b, k))
    if not keep_distributions:
        return ids, None
    b, _, v = all_logits.shape
    logq = token_distribution(all_logits.reshape(b * k, v), per_position(params, k)).view(b, k, v)
    if not heads.truncated:
        return ids, logq
    full = logq.new_full((b, k, decoder.lm_head.out_features), float("-inf"))
    return ids, full.index_copy_(-1, heads.vocab, logq)
