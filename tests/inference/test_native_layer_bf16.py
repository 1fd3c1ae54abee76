"""The C decoder layer over a bf16 engine's weights (`engine.dtype: bfloat16`,
`engine.cpu_decode: native`): each weight is widened to fp32 as it is read, so a step is
the fp32 kernel's step over the same (bf16-rounded) weights, and a bf16 engine's
decode steps stay within bf16 rounding of PyTorch's bf16 layers.

No skip: the C layer must build here (as in `test_native_layer.py`).
"""

from __future__ import annotations

import copy

import pytest
import torch
from test_native_layer import MODELS, counted, decode_steps, engine, prompts
from torch import Tensor

from shadowrl.inference.engine import Engine
from shadowrl.inference.native_layer import NativeLayers
from shadowrl.types import SamplingParams

BF16_STEP = 2**-7  # the relative spacing of bf16 values at most (8 significant bits)


def layer_step(eng: Engine, h: Tensor, cos: Tensor, sin: Tensor, lengths: list[int]) -> Tensor:
    """The engine's C layers on hidden states `h` [B, hidden] at positions `lengths`."""
    layers = eng.decoder.decode_layers
    assert isinstance(layers, NativeLayers)
    with torch.inference_mode():
        return layers(h[:, None].to(eng.model.dtype), cos, sin, [n + 1 for n in lengths], eng.cache)


@pytest.mark.parametrize("arch", ["llama-biases", "qwen2"])  # every bias read as bf16 too
def test_bf16_weights_give_the_fp32_kernels_result_over_the_same_weights(arch) -> None:
    bf16 = MODELS[arch](0).to(torch.bfloat16)
    fp32 = copy.deepcopy(bf16).float()  # the same values, held as fp32
    lengths = [3, 40, 300]
    engines = {
        dtype: engine(model, "native", max_batch=3, dtype=dtype, kv_dtype="bfloat16")
        for dtype, model in (("bfloat16", bf16), ("float32", fp32))
    }
    assert engines["bfloat16"].decoder.decode_layers.dtype is torch.bfloat16  # type: ignore[union-attr]
    g = torch.Generator().manual_seed(0)  # any seed: 40 were tried with both models
    cached = torch.randn(3, 2, 301, 16, generator=g).bfloat16()  # keys and values, shared
    for eng in engines.values():
        for pool in (*eng.cache.keys, *eng.cache.values):
            pool[:, :, :301] = cached
    h = torch.randn(3, 96, generator=g).bfloat16().float()  # in bf16: both read it exactly
    # one rotary embedding for both (the fp32 engine's: a bf16 one rounds cos and sin)
    cos, sin = engines["float32"].decoder.rotary(h[:, None], torch.tensor(lengths)[:, None])
    out = {dtype: layer_step(eng, h, cos, sin, lengths) for dtype, eng in engines.items()}
    assert out["bfloat16"].dtype is torch.bfloat16
    # The same float32 maths: equal once the fp32 result is rounded as the bf16 engine
    # rounds its own, but where a value's fp32 sums (compiled apart, they may differ in
    # their last bits) straddle a bf16 rounding boundary: one bf16 step there. A kernel that
    # read the weights wrongly, or missed a bias, is off by whole units in most values.
    pairs = [(out["bfloat16"], out["float32"].bfloat16())]
    pairs += zip(engines["bfloat16"].cache.keys, engines["float32"].cache.keys, strict=True)
    for got, want in pairs:
        torch.testing.assert_close(got.float(), want.float(), atol=0, rtol=BF16_STEP)
        assert (got != want).sum() <= 2  # of 288 output values; of 288 written keys


def test_a_bf16_engines_steps_stay_within_bf16_rounding_of_the_torch_layers() -> None:
    model = MODELS["qwen2"](0).to(torch.bfloat16)
    lengths = [1, 40, 300, 17]
    engines = {
        mode: engine(model, mode, max_batch=4, dtype="bfloat16") for mode in ("native", "torch")
    }
    calls = counted(engines["native"])
    logits = {mode: decode_steps(eng, lengths) for mode, eng in engines.items()}
    assert calls == [len(lengths)] * 3 * 2  # the C layer took every step
    gap = (logits["native"].float() - logits["torch"].float()).abs()
    # PyTorch's bf16 layers round every activation to bf16 (8 significant bits); logits of
    # ~5 then move by up to a few bf16 steps of 2^-5 over two layers. A wrong weight or a
    # missed term moves them by whole units.
    assert gap.max() < 0.25 and gap.mean() < 0.03


def test_greedy_generation_of_a_bf16_engine_runs_on_the_c_layers() -> None:
    """Whole engines: the C layers serve a bf16 engine's decode steps end to end, and its
    greedy tokens agree with PyTorch's bf16 layers nearly everywhere (exact agreement is
    not expected: the two round activations differently)."""
    model = MODELS["llama"](0).to(torch.bfloat16)
    ps = prompts(5, 30, 60, 12, seed=2)
    params = SamplingParams(max_new_tokens=16, temperature=0.0)
    out = {}
    for mode in ("native", "torch"):
        eng = engine(model, mode, max_batch=4, dtype="bfloat16")
        calls = counted(eng) if mode == "native" else [1]
        out[mode] = [g.token_ids for g in eng.generate_batch(ps, params)]
        assert calls
    first = [a[0] == b[0] for a, b in zip(out["native"], out["torch"], strict=True)]
    assert sum(first) >= 3  # the first sampled token, after one identical prefill
