"""A bf16 KV cache under fp32 weights (`engine.kv_dtype`): what it stores, that every
attention path reads it, and how far it moves logprobs from the fp32 cache.

No skip: the C layer must build here (as in `test_native_layer.py`).
"""

from __future__ import annotations

import pytest
import torch
from test_native_layer import MODELS, counted, decode_steps, engine, prompts

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.models import tiny_model
from shadowrl.types import SamplingParams

GREEDY = SamplingParams(max_new_tokens=12, temperature=0.0)
# bf16 keeps 8 significant bits: one unit in the last place is 2^-8 of a value's magnitude.
BF16_ULP = 2**-8
# The C layer's products sum in another order than PyTorch's (~3e-6 apart in fp32, as in
# test_native_layer.py), so a decode step's new key can round to the neighbouring bf16
# value where it sits near a rounding boundary; logits read one such key one ulp apart,
# which moved them by at most ~4e-4 over these models. 2e-3 is 5x that and far below a
# wrong read (keys taken as fp32 bits, or a missed write: ~0.1 and more).
LOGITS_ATOL_BF16 = 2e-3


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_the_c_layer_writes_and_reads_a_bf16_cache_as_the_torch_layers_do(arch: str) -> None:
    model = MODELS[arch](0)
    lengths = [1, 40, 300, 17]
    engines = {
        mode: engine(model, mode, max_batch=len(lengths), kv_dtype="bfloat16")
        for mode in ("native", "torch")
    }
    calls = counted(engines["native"])
    logits = {mode: decode_steps(eng, lengths) for mode, eng in engines.items()}
    assert calls == [len(lengths)] * 3 * 2  # the C layer took every step over the bf16 cache
    torch.testing.assert_close(logits["native"], logits["torch"], atol=LOGITS_ATOL_BF16, rtol=0)
    native, reference = engines["native"].cache, engines["torch"].cache
    assert native.dtype == reference.dtype == torch.bfloat16
    written = equal = 0
    for layer in range(2):
        for got, want in ((native.keys, reference.keys), (native.values, reference.values)):
            for row, n in enumerate(lengths):  # the decode steps' three positions
                a, b = got[layer][row, :, n : n + 3].float(), want[layer][row, :, n : n + 3].float()
                torch.testing.assert_close(a, b, atol=1e-6, rtol=2 * BF16_ULP)
                written, equal = written + a.numel(), equal + int((a == b).sum())
    # Rounding to nearest (PyTorch's cast) leaves a neighbour only near a boundary; C that
    # truncated instead would differ in about half of the values.
    assert equal >= 0.95 * written


def test_a_bf16_cache_stays_within_bf16_rounding_of_the_fp32_one() -> None:
    model = MODELS["llama"](0)
    lengths = [5, 60, 200]
    logits = {
        kv: decode_steps(engine(model, "native", max_batch=3, kv_dtype=kv), lengths)
        for kv in ("float32", "bfloat16")
    }
    gap = (logits["bfloat16"] - logits["float32"]).abs().max().item()
    # bf16 keys and values carry relative errors up to 2^-9; over two layers of these
    # random models that moved logits (magnitude ~5) by ~1e-2. A cache read as the wrong
    # dtype, or not written, moves them by whole units.
    assert 0 < gap < 0.05


@pytest.mark.parametrize("kv", ["contiguous", "paged"])
def test_every_attention_path_reads_the_bf16_cache(kv: str) -> None:
    """Prefill (fresh and after a prefix-cache hit), masked and per-row decode, PyTorch's
    layers: one engine with each, against the same engine without the prefix cache, to
    the tolerance bf16 rounding of the same keys allows (none: they read the same values)."""
    model, tok = tiny_model(seed=0)
    system = prompts(80, seed=3)[0]
    ps = [system + p for p in prompts(9, 14, 30, seed=4)]
    config = dict(kv=kv, kv_block_size=4, kv_dtype="bfloat16", cpu_decode="torch")
    cached = Engine(model, tok, EngineConfig(initial_kv_len=16, **config))
    plain = Engine(model, tok, EngineConfig(prefix_cache_tokens=0, **config))
    assert cached.cache.dtype == torch.bfloat16
    first = cached.generate_batch(ps[:1], GREEDY)  # parks the system prompt's KV
    got = first + cached.generate_batch(ps[1:], GREEDY)
    want = plain.generate_batch(ps, GREEDY)
    assert cached.prefix.hit_tokens >= 2 * len(system)
    for a, b in zip(got, want, strict=True):
        assert a.token_ids == b.token_ids
        torch.testing.assert_close(
            torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4, rtol=0
        )


def test_auto_stores_the_engines_dtype() -> None:
    model, tok = tiny_model(seed=0)
    assert Engine(model, tok, EngineConfig()).cache.dtype == torch.float32
    assert Engine(model, tok, EngineConfig(dtype="bfloat16")).cache.dtype == torch.bfloat16
    stored = Engine(model, tok, EngineConfig(dtype="bfloat16", kv_dtype="float32")).cache
    assert stored.dtype == torch.float32
