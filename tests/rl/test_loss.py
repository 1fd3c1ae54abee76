"""Hand-computed checks of every term of the RL objective."""

import math
from typing import get_args

import pytest
import torch

from shadowrl.rl.config import Advantage
from shadowrl.rl.loss import (
    ADVANTAGES,
    K3_MAX,
    LossStats,
    group_advantages,
    k3_kl,
    linear_token_logprobs,
    policy_loss,
    positive_advantages,
    sft_stats,
    zero_advantage_groups,
)


def test_advantage_is_centred_not_scaled():
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]))
    assert adv.tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25])
    # Scaling rewards scales advantages: there is no std division.
    assert group_advantages(torch.tensor([10.0, 0.0, 0.0, 0.0])).tolist() == pytest.approx(
        [7.5, -2.5, -2.5, -2.5]
    )


def test_positive_advantage_keeps_only_the_half_above_the_group_mean():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [0.5, 0.5, 0.5, 0.5]])
    want = [0.75, 0, 0, 0, 0.25, 0.25, 0.25, 0, 0, 0, 0, 0]
    assert positive_advantages(rewards).flatten().tolist() == pytest.approx(want)
    # The attempts above the mean get exactly the centred advantage; no one gets less than 0.
    centred = group_advantages(rewards)
    assert torch.equal(positive_advantages(rewards)[centred > 0], centred[centred > 0])


def test_every_configurable_advantage_has_its_function():
    # `train.loss.advantage` is validated against the config's Literal; the trainer looks
    # the name up in the loss's table, so the two must name the same set.
    assert set(get_args(Advantage)) == set(ADVANTAGES)


def test_flat_group_is_exactly_zero_and_counted():
    rewards = torch.tensor([[0.1, 0.1, 0.1], [1.0, 0.0, 1.0], [0.7, 0.7, 0.7]])
    adv = group_advantages(rewards)
    assert (adv[0] == 0).all() and (adv[2] == 0).all()
    assert zero_advantage_groups(rewards) == 2
    lp = torch.full((3, 4), -1.0, requires_grad=True)
    mask = torch.ones(3, 4, dtype=torch.bool)
    loss, stats = policy_loss(lp, lp.detach(), adv[:, 0], mask, token_budget=12)
    loss.backward()
    assert lp.grad is not None and (lp.grad[0] == 0).all()
    assert stats.zero_adv_rows == 2  # rows 0 and 2 (group 1's first row is 1/3, not 0)


def test_on_policy_loss_value_and_gradient():
    lp = torch.tensor([[-1.0, -2.0, 0.0]], requires_grad=True)
    mask = torch.tensor([[True, True, False]])
    loss, stats = policy_loss(lp, lp.detach(), torch.tensor([1.0]), mask, token_budget=4)
    assert loss.item() == pytest.approx(0.75)  # −(−1 − 2)/4
    loss.backward()
    assert lp.grad[0].tolist() == pytest.approx([-0.25, -0.25, 0.0])
    assert stats.to_metrics()["ratio_mean"] == pytest.approx(1.0)
    assert stats.to_metrics()["clip_frac"] == 0.0


def test_truncated_importance_weight():
    lp = torch.log(torch.tensor([[0.5, 0.5]])).requires_grad_()
    behaviour = torch.log(torch.tensor([[0.1, 1.0]]))  # ratios 5 and 0.5
    mask = torch.ones(1, 2, dtype=torch.bool)
    loss, stats = policy_loss(lp, behaviour, torch.tensor([2.0]), mask, token_budget=1, is_clip=2.0)
    loss.backward()
    # d/dlogπ = −w·A/budget, w = min(ratio, C) detached: −2·2 and −0.5·2.
    assert lp.grad[0].tolist() == pytest.approx([-4.0, -1.0])
    m = stats.to_metrics()
    assert m["ratio_max"] == pytest.approx(5.0) and m["ratio_min"] == pytest.approx(0.5)
    assert m["clip_frac"] == 0.5


def test_masked_garbage_never_leaks():
    lp = torch.tensor([[-1.0, -50.0]], requires_grad=True)
    behaviour = torch.tensor([[-1.0, 80.0]])  # nonsense where the mask is False
    mask = torch.tensor([[True, False]])
    loss, stats = policy_loss(lp, behaviour, torch.tensor([1.0]), mask, token_budget=1)
    loss.backward()
    assert torch.isfinite(loss) and lp.grad[0].tolist() == pytest.approx([-1.0, 0.0])
    assert stats.to_metrics()["ratio_max"] == pytest.approx(1.0)


def test_tokens_weigh_the_same_in_long_and_short_sequences():
    lp = torch.full((2, 6), -1.0, requires_grad=True)
    mask = torch.zeros(2, 6, dtype=torch.bool)
    mask[0, :] = True  # long: 6 tokens
    mask[1, :2] = True  # short: 2 tokens
    loss, _ = policy_loss(lp, lp.detach(), torch.tensor([1.0, 1.0]), mask, token_budget=8)
    loss.backward()
    # Every generated token gets −A/8; per-sequence normalisation would give 1/6 vs 1/2.
    assert lp.grad[0].tolist() == pytest.approx([-1 / 8] * 6)
    assert lp.grad[1].tolist() == pytest.approx([-1 / 8] * 2 + [0.0] * 4)


def test_k3_kl_value_and_gradient():
    assert k3_kl(torch.tensor(-1.0), torch.tensor(-1.0)).item() == 0.0
    lp = torch.log(torch.tensor([[0.5]])).requires_grad_()
    ref = torch.log(torch.tensor([[0.25]]))
    mask = torch.ones(1, 1, dtype=torch.bool)
    loss, stats = policy_loss(
        lp, lp.detach(), torch.tensor([0.0]), mask, token_budget=1, ref_logprobs=ref, kl_coef=0.1
    )
    k3 = 0.5 - math.log(0.5) - 1  # r − log r − 1, r = 0.25/0.5
    assert loss.item() == pytest.approx(0.1 * k3)
    loss.backward()
    assert lp.grad.item() == pytest.approx(0.1 * (1 - 0.5))  # d k3/d logπ = 1 − r
    assert stats.to_metrics()["kl"] == pytest.approx(k3)


def test_k3_kl_is_capped_per_token():
    lp = torch.tensor([-12.0, -1.0], requires_grad=True)  # π_ref/π_θ = e^12 on the first
    kl = k3_kl(lp, torch.tensor([0.0, -1.0]))
    assert kl.tolist() == [K3_MAX, 0.0]
    kl.sum().backward()
    assert lp.grad is not None and lp.grad.tolist() == [0.0, 0.0]


def test_kl_needs_reference():
    lp = torch.zeros(1, 1)
    with pytest.raises(ValueError):
        policy_loss(lp, lp, torch.zeros(1), lp > -1, token_budget=1, kl_coef=0.1)


def reference_logprobs(h, w, b, tgt):
    logits = torch.nn.functional.linear(h.float(), w.float(), None if b is None else b.float())
    return torch.log_softmax(logits, -1).gather(-1, tgt[:, None])[:, 0]


@pytest.mark.parametrize("with_bias", [False, True])
def test_chunked_linear_logprobs_match_full_log_softmax_and_its_gradients(with_bias):
    # Values and all three gradients (hidden, weight, bias) against autograd through
    # the full [N, V] logits, with a chunk that does not divide N.
    torch.manual_seed(0)
    n, d, v = 7, 5, 11
    h, w = torch.randn(n, d, requires_grad=True), torch.randn(v, d, requires_grad=True)
    b = torch.randn(v, requires_grad=True) if with_bias else None
    tgt = torch.randint(0, v, (n,))
    upstream = torch.randn(n)  # arbitrary per-token weights, like w·A/budget of the RL loss
    got = linear_token_logprobs(h, w, tgt, bias=b, chunk=3)
    ref = reference_logprobs(h, w, b, tgt)
    torch.testing.assert_close(got, ref, atol=1e-6, rtol=1e-5)
    inputs = [h, w] + ([b] if b is not None else [])
    g_got = torch.autograd.grad((got * upstream).sum(), inputs)
    g_ref = torch.autograd.grad((ref * upstream).sum(), inputs)
    for a, e in zip(g_got, g_ref, strict=True):
        torch.testing.assert_close(a, e, atol=1e-5, rtol=1e-5)


def test_linear_logprobs_in_bf16_return_float32_and_bf16_grads():
    torch.manual_seed(0)
    h = torch.randn(6, 8, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(13, 8, dtype=torch.bfloat16, requires_grad=True)
    tgt = torch.randint(0, 13, (6,))
    got = linear_token_logprobs(h, w, tgt, chunk=4)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, reference_logprobs(h, w, None, tgt), atol=2e-2, rtol=1e-2)
    got.sum().backward()
    assert h.grad is not None and h.grad.dtype == torch.bfloat16
    assert w.grad is not None and w.grad.dtype == torch.bfloat16


def test_linear_logprobs_under_autocast_keep_the_head_in_the_weights_dtype():
    # `train.autocast` must not round the logits to bf16: logits near 20 are 0.125 apart
    # there, a logprob error far above the 1e-5 that the fp32 head gives.
    torch.manual_seed(0)
    h, w = torch.randn(64, 32) * 3, torch.randn(50, 32) * 3
    tgt = torch.randint(0, 50, (64,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = linear_token_logprobs(h, w, tgt, chunk=16)
    torch.testing.assert_close(got, reference_logprobs(h, w, None, tgt), atol=1e-5, rtol=1e-5)


def test_stats_of_no_tokens_report_no_ratio_rather_than_infinities():
    import json

    m = (LossStats.zero() + LossStats.zero()).to_metrics()
    assert m["tokens"] == 0.0 and not {"ratio_mean", "ratio_max", "ratio_min"} & m.keys()
    json.dumps(m, allow_nan=False)  # metrics.jsonl stays strict JSON


def test_sft_stats_report_no_ratio():
    import json

    lp = torch.tensor([[-0.5, -1.0, 0.0]])
    mask = torch.tensor([[True, True, False]])
    m = sft_stats(lp, mask).to_metrics()
    assert m["tokens"] == 2.0 and m["nll"] == pytest.approx(0.75)
    assert not {"ratio_mean", "ratio_max", "ratio_min"} & m.keys()
    json.dumps(m, allow_nan=False)
