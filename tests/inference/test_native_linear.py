"""The C product kernel (`native.NativeLinear`, `csrc/linear_rows.c`) against `F.linear`.

No skip: a machine that cannot build the kernel fails here, since `engine.cpu_products`
'auto' would silently fall back to torch's products there.
"""

from __future__ import annotations

import copy
import logging
import platform
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from shadowrl.inference import native
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.native import MAX_ROWS, NativeLinear, linear_kernel
from shadowrl.inference.precision import Dense, NativeDense
from shadowrl.models import tiny_model
from shadowrl.types import SamplingParams

# Each vector path the kernel has, built on this CPU: the widest it has (AVX-512 here),
# AVX2 (the AVX2-only EPYC's) and 128-bit vectors; the flags only narrow -march=native.
PATHS = [(), ("-mno-avx512f",), ("-mno-avx",)] if platform.machine() == "x86_64" else [()]
# nn.Linear's own init makes |y| <= ~3; the kernel and F.linear sum in different orders,
# and differed by at most 1.4e-6 over these shapes (each within 1.5e-6 of float64), so
# 1e-5 absolute is ~7x that, and far below a wrong term (>= 1e-3 here).
ATOL, RTOL = 1e-5, 1e-5
# Against float64 the kernel erred by at most 7.2e-7 (the 128-bit path; F.linear 1.5e-6).
FLOAT64_ERROR = 2e-6
SHAPES = [(576, 576), (576, 1536), (1536, 576), (37, 49), (576, 1), (1536, 49), (37, 1536)]


def layer(k: int, n: int, bias: bool, seed: int = 0) -> torch.nn.Linear:
    torch.manual_seed(seed)
    return torch.nn.Linear(k, n, bias=bias)


def run_kernel(kernel: Callable[..., None], x: torch.Tensor, lin: torch.nn.Linear) -> torch.Tensor:
    out = torch.empty(x.shape[0], lin.out_features)
    bias = None if lin.bias is None else lin.bias.data_ptr()
    kernel(x.data_ptr(), lin.weight.data_ptr(), bias, out.data_ptr(),
           x.shape[0], lin.in_features, lin.out_features, torch.get_num_threads())  # fmt: skip
    return out


@pytest.mark.parametrize("flags", PATHS, ids=lambda f: " ".join(f) or "native")
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize(("k", "n"), SHAPES)
@torch.inference_mode()
def test_kernel_matches_f_linear(flags, bias, k, n) -> None:
    lin = layer(k, n, bias)
    kernel = linear_kernel(flags)
    for m in (1, 2, 3, 7, 8, 13, 16):
        x = torch.randn(m, k, generator=torch.Generator().manual_seed(m))
        got = run_kernel(kernel, x, lin)
        torch.testing.assert_close(got, F.linear(x, lin.weight, lin.bias), atol=ATOL, rtol=RTOL)
        exact = F.linear(x.double(), lin.weight.double(), None if not bias else lin.bias.double())
        assert (got.double() - exact).abs().max() < FLOAT64_ERROR


@torch.inference_mode()
def test_native_linear_takes_any_leading_shape_and_non_contiguous_input() -> None:
    lin = layer(576, 49, True)
    wrapped = NativeLinear(lin)
    x = torch.randn(4, 1, 2 * 576)[..., ::2]  # every other element: not contiguous
    assert not x.is_contiguous()
    got = wrapped(x)
    assert got.shape == (4, 1, 49)
    torch.testing.assert_close(got, lin(x), atol=ATOL, rtol=RTOL)


@pytest.fixture
def counted(monkeypatch) -> list[int]:
    """Counts the kernel's calls (each row count it was given)."""
    calls: list[int] = []
    real = linear_kernel()

    def kernel(*args: Any) -> None:
        calls.append(args[4])
        real(*args)

    monkeypatch.setattr(native, "linear_kernel", lambda flags=(): kernel)
    return calls


@torch.inference_mode()
def test_more_rows_or_other_dtypes_go_to_f_linear(counted) -> None:
    lin = layer(64, 32, True)
    wrapped = NativeLinear(lin)
    wrapped(torch.randn(MAX_ROWS, 64))
    assert counted == [MAX_ROWS]
    for x in (torch.randn(MAX_ROWS + 1, 64), torch.randn(0, 64)):
        torch.testing.assert_close(wrapped(x), lin(x))
    for dtype in (torch.float64, torch.bfloat16):
        cast = copy.deepcopy(lin).to(dtype)
        x = torch.randn(3, 64, dtype=dtype)
        assert torch.equal(NativeLinear(cast)(x), cast(x))
    assert counted == [MAX_ROWS]


def test_autograd_goes_to_f_linear(counted) -> None:
    lin = layer(64, 32, True)
    x = torch.randn(2, 64, requires_grad=True)
    NativeLinear(lin)(x).sum().backward()
    assert x.grad is not None and not counted


@torch.inference_mode()
def test_an_in_place_weight_write_shows_at_the_next_call() -> None:
    lin = layer(576, 576, True)
    wrapped = NativeLinear(lin)
    x = torch.randn(8, 576)
    before = wrapped(x)
    lin.weight.copy_(layer(576, 576, True, seed=1).weight)  # what a swap does
    lin.bias.add_(1.0)
    after = wrapped(x)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, F.linear(x, lin.weight, lin.bias), atol=ATOL, rtol=RTOL)


def engines(**config: Any) -> dict[str, Engine]:
    model, _ = tiny_model(seed=0)
    return {
        mode: Engine(copy.deepcopy(model), None, EngineConfig(cpu_products=mode, **config))
        for mode in ("native", "torch")
    }


def test_decode_with_the_kernel_matches_torch_logits(counted) -> None:
    """Whole decode steps through the engine, each product of 3 rows in the kernel."""
    built = engines(max_batch=3)
    native_engine = built["native"]
    assert isinstance(native_engine.precision, NativeDense)
    assert isinstance(built["torch"].precision, Dense)
    assert len(native_engine.precision.layers) == 2 * 7 + 1  # 2 layers x 7 + the LM head
    g = torch.Generator().manual_seed(4)
    prompts = [torch.randint(3, 200, (n,), generator=g).tolist() for n in (7, 30, 18)]
    logits, calls = {}, {}
    for mode, engine in built.items():
        slots = list(range(len(prompts)))
        engine.cache.prepare(slots, [0] * 3, [len(p) + 3 for p in prompts])
        with torch.inference_mode():
            engine.decoder.prefill(prompts, slots, engine.cache)
            lengths = torch.tensor([len(p) for p in prompts])
            start, steps = len(counted), []
            for step in range(3):
                tokens = torch.tensor([5 + step, 6, 7])
                steps.append(engine.decoder.decode(tokens, lengths + step, engine.cache, 40))
            logits[mode], calls[mode] = torch.stack(steps), counted[start:]
    # every product of the native engine's 3 steps ran in the kernel, at 3 rows; none of torch's
    assert calls == {"native": [3] * 3 * 15, "torch": []}
    torch.testing.assert_close(logits["native"], logits["torch"], atol=1e-4, rtol=0)


def greedy_tokens(engine: Engine, prompts: list[list[int]]) -> list[tuple[int, ...]]:
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    return [g.token_ids for g in engine.generate_batch(prompts, greedy)]


def test_greedy_tokens_equal_torch_products_and_follow_a_swap() -> None:
    built = engines(max_batch=4)
    prompts = [[5, 9, 200, 17], [3, 4], [8] * 11]
    tokens = {mode: greedy_tokens(engine, prompts) for mode, engine in built.items()}
    assert tokens["native"] == tokens["torch"]
    other, _ = tiny_model(seed=1)
    for engine in built.values():  # in place into the model's Parameters
        engine.update_weights(other.state_dict(), version=1)
    swapped = {mode: greedy_tokens(engine, prompts) for mode, engine in built.items()}
    assert swapped["native"] == swapped["torch"] != tokens["torch"]


def test_cpu_products_apply_to_float32_dense_weights_only() -> None:
    model, _ = tiny_model(seed=0)
    for config in (
        EngineConfig(cpu_products="native", dtype="bfloat16"),
        EngineConfig(cpu_products="native", weights="int8"),
        EngineConfig(cpu_products="torch"),
    ):
        engine = Engine(copy.deepcopy(model), None, config)
        assert not isinstance(engine.precision, NativeDense)
        assert not any(isinstance(m, NativeLinear) for m in engine.model.modules())


def test_no_compiler_is_an_error_for_native_and_a_warning_for_auto(
    monkeypatch, tmp_path, caplog
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing built here yet
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    model, _ = tiny_model(seed=0)
    linear_kernel.cache_clear()
    try:
        with pytest.raises(native.NativeUnavailable, match="no-such-cc"):
            Engine(copy.deepcopy(model), None, EngineConfig(cpu_products="native"))
        with caplog.at_level(logging.WARNING, logger="shadowrl.inference.native"):
            engine = Engine(copy.deepcopy(model), None, EngineConfig(cpu_products="auto"))
        assert isinstance(engine.precision, Dense)
        assert "engine.cpu_products 'auto': falling back" in caplog.text
        assert not any(isinstance(m, NativeLinear) for m in engine.model.modules())
    finally:
        linear_kernel.cache_clear()
