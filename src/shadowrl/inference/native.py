"""CPU decode kernels in C (`csrc/`), built on first use (`_kernels.py`): attention and
the Linear layers' products.

Attention (`csrc/decode_attention.c`). A CPU decode step attends each row over its own
length (`forward.Decoder.decode`). With PyTorch's SDPA that is one call per row and
layer, and on a 2-core box those calls read the KV cache at a third of the memory
bandwidth in fp32 (a fifth in bf16): at 32 rows of ~900 tokens they were ~60 % of the
step. The kernel does all rows of a layer in one call, each (row, kv head) reading its
keys and values once, on torch's own OpenMP threads.

Products (`csrc/linear_rows.c`). At 4-16 rows PyTorch's fp32 `F.linear` re-packs the
weight on every call and costs 2-2.5x its 1-row time on SmolLM2 (issue 34); the kernel
reads each weight once from memory, all rows against a few weight rows at a time
(`NativeLinear`, wired in by `precision.build_precision`).

`engine.cpu_attention` and `engine.cpu_products` pick the implementations: 'native'
builds the kernel with the C compiler (`$CC`, else `cc`; `-march=native`, so one build
per CPU, cached under `~/.cache/shadowrl/kernels`) and fails if it cannot; 'torch' keeps
PyTorch's; 'auto' tries the kernel and falls back to PyTorch with a warning. Results
match PyTorch's to float tolerance (the kernels' exp and summation order differ), not
bit for bit.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Callable
from typing import Protocol, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from shadowrl.inference._kernels import NativeUnavailable, build

log = logging.getLogger(__name__)
T = TypeVar("T")

KV_DTYPES = {torch.float32: 0, torch.bfloat16: 1}
MAX_GROUP = 16  # the kernel's MAX_GROUP
# Above this many rows torch's packed product amortises its packing (issue 34; SmolLM2's
# products, quiet box, 2026-12-07: torch/native 1.25 at 16 rows, 1.07 at 24, 0.93 at 32).
MAX_ROWS = 16


# With SDPA, a decode step attends row by row from this span: below it one masked call over
# the shared span was the cheaper (32 rows of 300-1,300 tokens: 7.6 vs 3.7 ms a layer, one
# thread; at 20-100 tokens 0.53 vs 0.72 ms). The kernel is the cheaper at every span.
PER_ROW_SPAN = 256


class RowAttention(Protocol):
    """Decode attention of queries [rows, kv_heads, group, D] over each row's own (keys,
    values) [1, kv_heads, n_i, D] (`KVCache.read_rows`); a CPU decode step uses it at
    spans from `min_span` and one masked SDPA call below."""

    min_span: int

    def __call__(self, q: Tensor, rows: list[tuple[Tensor, Tensor]]) -> Tensor: ...


class SdpaRows:
    """`RowAttention` with PyTorch's SDPA, one call per row, no mask; keys and values in
    another dtype than q's (`engine.kv_dtype`) are upcast row by row."""

    min_span = PER_ROW_SPAN

    def __call__(self, q: Tensor, rows: list[tuple[Tensor, Tensor]]) -> Tensor:
        return torch.cat([
            F.scaled_dot_product_attention(q[i : i + 1], keys.to(q.dtype), values.to(q.dtype))
            for i, (keys, values) in enumerate(rows)
        ])  # fmt: skip


@functools.cache
def load(head_dim: int) -> ctypes.CDLL:
    """The attention kernel for `head_dim`, built once per CPU (NativeUnavailable if not)."""
    lib = build(("decode_attention",), f"decode_attention_d{head_dim}", [f"-DHEAD_DIM={head_dim}"])
    fn = lib.decode_attention
    ptr, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    fn.argtypes = [ptr] * 6 + [i64, ptr, i32, i32, i32, ctypes.c_float, i32, i32]
    fn.restype = i32
    return lib


class NativeRows:
    """`RowAttention` through the C kernel; rows it cannot take (a KV dtype other than
    fp32/bf16, a query group above 16) go to SDPA."""

    min_span = 0

    def __init__(self, head_dim: int) -> None:
        self.kernel = load(head_dim).decode_attention
        self.head_dim = head_dim

    def __call__(self, q: Tensor, rows: list[tuple[Tensor, Tensor]]) -> Tensor:
        b, kv_heads, group, d = q.shape
        keys0 = rows[0][0]
        bf16 = KV_DTYPES.get(keys0.dtype)
        pos = keys0.stride(2)
        if bf16 is None or group > MAX_GROUP or d != self.head_dim or not _plain(rows, pos):
            return SdpaRows()(q, rows)
        queries = q.float().contiguous()
        out = torch.empty_like(queries)
        words = ctypes.c_int64 * b
        failed = self.kernel(
            queries.data_ptr(), out.data_ptr(),
            words(*[k.data_ptr() for k, _ in rows]), words(*[v.data_ptr() for _, v in rows]),
            words(*[k.stride(1) for k, _ in rows]), words(*[v.stride(1) for _, v in rows]),
            pos, (ctypes.c_int32 * b)(*[k.shape[2] for k, _ in rows]),
            b, kv_heads, group, d**-0.5, bf16, torch.get_num_threads(),
        )  # fmt: skip
        if failed:
            raise RuntimeError("decode_attention kernel: out of memory or an empty row")
        return out.to(q.dtype)


def _plain(rows: list[tuple[Tensor, Tensor]], pos: int) -> bool:
    """Every row's keys and values step `pos` elements a position, elements adjacent."""
    return all(
        k.stride(2) == pos == v.stride(2) and k.stride(3) == 1 == v.stride(3)
        and k.dtype == v.dtype == rows[0][0].dtype
        for k, v in rows
    )  # fmt: skip


def native_or(setting: str, mode: str, native: Callable[[], T], torch_: Callable[[], T]) -> T:
    """An engine `setting` ('auto' | 'native' | 'torch', in `mode`) resolved: the native
    build, or PyTorch's; 'native' raises NativeUnavailable where the kernel cannot be
    built, 'auto' falls back with a warning."""
    if mode == "torch":
        return torch_()
    try:
        return native()
    except NativeUnavailable as e:
        if mode == "native":
            raise
        log.warning("engine.%s 'auto': falling back to PyTorch (%s)", setting, e)
        return torch_()


def row_attention(mode: str, head_dim: int, device: torch.device) -> RowAttention:
    """The row attention `engine.cpu_attention` names (`mode`), for a CPU decoder."""
    if device.type != "cpu":
        return SdpaRows()
    rows: Callable[[], RowAttention] = lambda: NativeRows(head_dim)  # noqa: E731
    return native_or("cpu_attention", mode, rows, SdpaRows)


@functools.cache
def linear_kernel(flags: tuple[str, ...] = ()) -> Callable[..., None]:
    """The product kernel `linear_rows`, built once per CPU (NativeUnavailable if not);
    `flags` (e.g. `-mno-avx512f`) build a narrower vector path, for benchmarks and tests."""
    fn = build(("linear_rows",), "linear_rows", flags).linear_rows
    ptr, i64 = ctypes.c_void_p, ctypes.c_int64
    fn.argtypes = [ptr, ptr, ptr, ptr, i64, i64, i64, ctypes.c_int]
    fn.restype = None
    return fn


class NativeLinear(nn.Linear):
    """An nn.Linear (the model's own `weight` and `bias` Parameters, so swaps write into
    it under the same names) whose fp32 CPU products of 1 to `MAX_ROWS` rows run in the
    C kernel, reading the live weight at each call; anything else goes to `F.linear`.
    `flags` build a narrower vector path (`linear_kernel`), for benchmarks and tests."""

    def __init__(self, linear: nn.Linear, flags: tuple[str, ...] = ()) -> None:
        nn.Module.__init__(self)  # not nn.Linear's: it would allocate weights of its own
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        self.flags = flags
        linear_kernel(flags)  # NativeUnavailable here, not at the first product

    def forward(self, x: Tensor) -> Tensor:
        # ~200 calls a decode step: the weights come from the dict nn.Module's attribute
        # lookup would search (0.5 us each), and every check is a cheap one
        w, b = self._parameters["weight"], self._parameters.get("bias")  # no bias: absent
        assert w is not None
        flat = x.reshape(-1, self.in_features)
        if not _fits(flat, w, b):
            return F.linear(x, w, b)
        flat = flat.contiguous()
        out = flat.new_empty(flat.shape[0], self.out_features)
        linear_kernel(self.flags)(
            flat.data_ptr(), w.data_ptr(), None if b is None else b.data_ptr(), out.data_ptr(),
            flat.shape[0], self.in_features, self.out_features, torch.get_num_threads(),
        )  # fmt: skip
        return out.view(*x.shape[:-1], self.out_features)


def _fits(flat: Tensor, w: Tensor, b: Tensor | None) -> bool:
    """What the kernel computes: 1 to MAX_ROWS fp32 rows on CPU by contiguous fp32
    weights, no autograd."""
    return (
        0 < flat.shape[0] <= MAX_ROWS
        and flat.dtype is w.dtype is torch.float32
        and flat.is_cpu
        and w.is_cpu
        and w.is_contiguous()
        and (b is None or (b.dtype is torch.float32 and b.is_contiguous()))
        and not (torch.is_grad_enabled() and (flat.requires_grad or w.requires_grad))
    )
