"""The C decode-attention kernel (`inference/native.py`) against PyTorch's SDPA.

No skip: a machine that cannot build the kernel fails here, since `engine.cpu_attention`
'auto' would silently decode at SDPA's speed there.
"""

from __future__ import annotations

import logging

import pytest
import torch

from shadowrl.inference import native
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.native import NativeRows, NativeUnavailable, SdpaRows, row_attention
from shadowrl.models import tiny_model

CPU = torch.device("cpu")


def cache_rows(lengths, kv_heads, head_dim, dtype, *, paged=False, seed=0):
    """Rows shaped as the caches hand them out: views of a [slots, Hkv, capacity, D]
    buffer (contiguous) or of a [Hkv, positions, D] pool at each row's offset (paged)."""
    g = torch.Generator().manual_seed(seed)
    capacity = max(lengths) + 7
    if paged:
        total = sum(lengths) + 11
        pools = [torch.randn(kv_heads, total, head_dim, generator=g).to(dtype) for _ in "kv"]
        starts = [11 + sum(lengths[:i]) for i in range(len(lengths))]
        return [
            tuple(p[:, s : s + n].unsqueeze(0) for p in pools)
            for s, n in zip(starts, lengths, strict=True)
        ]
    shape = (len(lengths), kv_heads, capacity, head_dim)
    keys, values = (torch.randn(shape, generator=g).to(dtype) for _ in "kv")
    return [(keys[i : i + 1, :, :n], values[i : i + 1, :, :n]) for i, n in enumerate(lengths)]


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize(
    ("group", "head_dim", "lengths"),
    [(3, 64, [1, 5, 300, 1000]), (1, 64, [700]), (7, 32, [2, 129, 64]), (16, 32, [40, 3])],
)
def test_kernel_matches_sdpa_in_fp32(paged, group, head_dim, lengths) -> None:
    rows = cache_rows(lengths, 2, head_dim, torch.float32, paged=paged)
    q = torch.randn(len(lengths), 2, group, head_dim, generator=torch.Generator().manual_seed(1))
    got = NativeRows(head_dim)(q, rows)
    torch.testing.assert_close(got, SdpaRows()(q, rows), atol=2e-6, rtol=1e-5)


def test_kernel_matches_sdpa_over_a_bf16_cache() -> None:
    """bf16 keys and values are widened exactly; the products run in fp32, so the kernel is
    at least as close to an fp32 reference as SDPA's bf16 path."""
    rows = cache_rows([3, 400, 1200], 3, 64, torch.bfloat16, seed=2)
    q = torch.randn(3, 3, 3, 64, generator=torch.Generator().manual_seed(3)).bfloat16()
    got = NativeRows(64)(q, rows)
    assert got.dtype == torch.bfloat16
    wide = [(k.float(), v.float()) for k, v in rows]
    reference = SdpaRows()(q.float(), wide)
    torch.testing.assert_close(got.float(), reference, atol=8e-3, rtol=0)
    err_sdpa = (SdpaRows()(q, rows).float() - reference).abs().max()
    assert (got.float() - reference).abs().max() <= err_sdpa + 1e-3


def test_what_the_kernel_cannot_take_goes_to_sdpa() -> None:
    """An fp16 cache and a query group above 16 are answered by SDPA, not refused."""
    attend = NativeRows(32)
    rows = cache_rows([9, 30], 1, 32, torch.float16)
    q = torch.randn(2, 1, 2, 32).half()
    torch.testing.assert_close(attend(q, rows), SdpaRows()(q, rows))
    rows = cache_rows([9, 30], 1, 32, torch.float32)
    q = torch.randn(2, 1, 17, 32)
    torch.testing.assert_close(attend(q, rows), SdpaRows()(q, rows))


def test_decode_with_the_kernel_matches_sdpa_logits() -> None:
    """Whole decode steps through the engine: the kernel attends at every span (it has
    no masked fallback below `PER_ROW_SPAN`), SDPA per row above it, masked below."""
    model, _ = tiny_model(seed=0)
    g = torch.Generator().manual_seed(4)
    prompts = [torch.randint(3, 200, (n,), generator=g).tolist() for n in (7, 300, 40)]
    logits = {}
    for mode in ("native", "torch"):
        engine = Engine(model, None, EngineConfig(max_batch=3, cpu_attention=mode))
        assert isinstance(engine.decoder.attend_rows, NativeRows if mode == "native" else SdpaRows)
        slots = list(range(len(prompts)))
        engine.cache.prepare(slots, [0] * 3, [len(p) + 1 for p in prompts])
        with torch.inference_mode():
            engine.decoder.prefill(prompts, slots, engine.cache)
            lengths = torch.tensor([len(p) for p in prompts])
            tokens = torch.tensor([5, 6, 7])
            logits[mode] = engine.decoder.decode(tokens, lengths, engine.cache, 301)
    torch.testing.assert_close(logits["native"], logits["torch"], atol=1e-4, rtol=0)


def test_no_compiler_is_an_error_for_native_and_a_warning_for_auto(
    monkeypatch, tmp_path, caplog
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing built here yet
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    native.load.cache_clear()
    try:
        with pytest.raises(NativeUnavailable, match="no-such-cc"):
            row_attention("native", 48, CPU)
        with caplog.at_level(logging.WARNING, logger="shadowrl.inference.native"):
            assert isinstance(row_attention("auto", 48, CPU), SdpaRows)
        assert "engine.cpu_attention 'auto': falling back" in caplog.text
        assert isinstance(row_attention("torch", 48, CPU), SdpaRows)
    finally:
        native.load.cache_clear()


def test_a_build_is_cached_and_reused(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    native.load.cache_clear()
    try:
        native.load(40)
        [built] = (tmp_path / "shadowrl/kernels").glob("decode_attention_d40_*.so")
        stamp = built.stat().st_mtime_ns
        native.load.cache_clear()
        native.load(40)  # a new process's first load: the file, not a second compile
    finally:
        native.load.cache_clear()
    assert list((tmp_path / "shadowrl/kernels").glob("*.so")) == [built]
    assert built.stat().st_mtime_ns == stamp


@pytest.mark.parametrize(
    "load", ["native.load(24)", "native.linear_kernel()", "native_layer.layer_kernel(24)"]
)
def test_loading_a_kernel_keeps_subnormal_floats(monkeypatch, tmp_path, load) -> None:
    """Linked with -ffast-math, gcc would add crtfastmath.o, whose constructor turns on
    flush-to-zero for the whole process when the library loads (hypothesis caught it).
    Every kernel is linked by `_kernels.build`, the decoder layer from three sources."""
    import subprocess
    import sys

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # a build of its own, loaded fresh
    probe = (
        f"import torch; from shadowrl.inference import native, native_layer; {load}; "
        "print((torch.tensor([1e-40]) * 2.0).item(), 2.5e-308 / 2 > 0)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    tiny, halved = out.stdout.split()
    assert float(tiny) > 0 and halved == "True"
