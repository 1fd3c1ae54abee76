"""Recorded tokens teacher-forced through a policy, against the logprobs recorded with them.

A recorded logprob is the log-probability of the token under the distribution it was
drawn from (`inference/sampling.py`: logits over the temperature, then the top-p
nucleus; the plain softmax when greedy). `tail_gap` recomputes exactly that, with one
forward per segment and policy version, and reports the largest difference: the
weights that generated the record give float32 rounding (~1e-6 on CPU), any other
checkpoint a gap orders of magnitude larger. This is how `shadowrl replay` checks that
it holds the recorded policy, and what it prints when it does not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from shadowrl.inference.sampling import filter_top_k_top_p
from shadowrl.rl.forward import decoder_hidden
from shadowrl.types import Segment


@dataclass(frozen=True)
class Run:
    """One generation inside a segment: positions [start, end) and how it was sampled."""

    segment: Segment
    start: int
    end: int
    temperature: float = 1.0
    top_p: float = 1.0


@dataclass(frozen=True)
class Gap:
    """max |log π(recorded token) − recorded logprob| over `tokens` generated tokens."""

    max_abs: float
    tokens: int
    versions: tuple[int, ...]  # the policy versions the tokens were sampled from


def sampled_logprobs(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """Log-probabilities [N, V] of the distribution a row with these settings samples from."""
    if temperature <= 0:  # greedy rows report the plain softmax
        return logits.float().log_softmax(-1)
    scaled = logits.float() / max(temperature, 1e-6)
    if top_p < 1.0:
        n = scaled.shape[0]
        keep_all = torch.zeros(n, dtype=torch.long, device=scaled.device)
        scaled = filter_top_k_top_p(scaled, keep_all, torch.full((n,), top_p, device=scaled.device))
    return scaled.log_softmax(-1)


def _run_logprobs(
    model: Any, hidden: torch.Tensor, ids: torch.Tensor, run: Run, at: list[int], chunk: int
) -> torch.Tensor:
    """log π of tokens `at` (positions in run.segment) given the hidden states [T, D]."""
    head, out = model.get_output_embeddings(), []
    for i in range(0, len(at), chunk):
        pos = torch.tensor(at[i : i + chunk])
        logits = head(hidden[pos - 1])  # the state at t-1 predicts token t
        lp = sampled_logprobs(logits, run.temperature, run.top_p)
        out.append(lp.gather(1, ids[pos][:, None])[:, 0])
    return torch.cat(out) if out else torch.zeros(0)


def tail_gap(weights: Callable[[int], Any], runs: Sequence[Run], chunk: int = 256) -> Gap:
    """Teacher-force every run through `weights(version)` (the policy of that version)."""
    gap, count, seen = 0.0, 0, set[int]()
    by_segment: dict[int, list[Run]] = {}
    for r in runs:
        by_segment.setdefault(id(r.segment), []).append(r)
    for group in by_segment.values():
        seg = group[0].segment
        ids = torch.tensor(seg.token_ids)
        last = max(r.end for r in group) - 1
        versions = sorted({seg.versions[p] for r in group for p in range(r.start, r.end)})
        for v in versions:
            model = weights(v)
            with torch.no_grad():
                hidden = decoder_hidden(model, ids[None, :last])[0]
                for r in group:
                    at = [p for p in range(max(r.start, 1), r.end) if seg.versions[p] == v]
                    lp = _run_logprobs(model, hidden, ids, r, at, chunk)
                    recorded = torch.tensor([seg.logprobs[p] for p in at])
                    if at:
                        gap = max(gap, float((lp - recorded).abs().max()))
                    count += len(at)
            seen.add(v)
    return Gap(gap, count, tuple(sorted(seen)))
