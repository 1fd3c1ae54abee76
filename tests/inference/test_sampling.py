"""Top-k / top-p filtering keeps the most likely token whatever top_p is (found by the
server's fuzz: top_p=6.7e-222 is 0 in float32 and used to drop every token, NaN logprobs)."""

from __future__ import annotations

import torch

from shadowrl.inference.sampling import filter_top_k_top_p


def test_a_top_p_that_rounds_to_zero_keeps_the_most_likely_token() -> None:
    logits = torch.tensor([[0.5, 2.0, -1.0], [1.0, 0.0, 3.0]])
    top_p = torch.tensor([6.7e-222, 0.0], dtype=torch.float32)
    kept = filter_top_k_top_p(logits, torch.zeros(2, dtype=torch.int64), top_p)
    assert torch.isfinite(kept).sum(dim=-1).tolist() == [1, 1]
    assert kept.argmax(dim=-1).tolist() == [1, 2]
    assert torch.isfinite(kept.log_softmax(dim=-1).max(dim=-1).values).all()


def test_top_p_keeps_the_nucleus() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    kept = filter_top_k_top_p(logits, torch.zeros(1, dtype=torch.int64), torch.tensor([0.7]))
    assert torch.isfinite(kept).tolist() == [[True, True, False]]
