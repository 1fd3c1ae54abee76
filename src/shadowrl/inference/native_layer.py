"""A CPU decode step's decoder layers in C, one call per layer (`csrc/decoder_layer.c`).

With the products and the attention already in C (`native.py`), a decode step of SmolLM2
at 8 rows still spent ~22 ms in small elementwise ops (norms, rotary, residual adds,
SiLU, the KV write) and ~22 ms in Python and dispatch, ~1,200 ATen calls a step (issue
34). `NativeLayers` runs each whole layer in one call instead: the C file reuses the
product and attention kernels and does the rest in plain loops.

`engine.cpu_decode` picks it ('native' | 'auto' | 'torch', as `native.native_or` reads
them). It covers dense Llama and Qwen2 layers (biases included) with fp32 weights, or bf16
ones (a bf16 engine's: widened to fp32 as they are read, so the layer computes in fp32 over
them and reads half the bytes), over either KV cache, storing fp32 or bf16
(`engine.kv_dtype`): the contiguous one's slots, or the paged one's pool read through its
block table in place, scattered rows too (nothing is gathered). Anything else (another
architecture, Qwen3's q/k norms, MoE, int8 weights, a GPU) keeps the PyTorch loop of
`forward.Decoder.decode`, decided once at start; a step with more than `MAX_ROWS` rows or
masked attention keeps it too, decided per step. Weights are read live: each step re-reads
the data pointers of the model's own Parameters, which weight swaps write into in place
(`weights.apply_state`). Over fp32 weights results match the PyTorch path to float
tolerance, not bit for bit; over bf16 weights they are more exact than PyTorch's bf16
layers, which round every activation to bf16.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from shadowrl.inference._kernels import build
from shadowrl.inference.kv import ContiguousKV, KVCache, Shape
from shadowrl.inference.native import KV_DTYPES, MAX_GROUP, NativeLinear, native_or
from shadowrl.inference.paged import PagedKV

log = logging.getLogger(__name__)

ARCHITECTURES = ("llama", "qwen2")  # dense layers of these shapes; Qwen3 adds q/k norms
# One layer's tensors, in `struct layer`'s order: (module path, tensor name).
LAYER_TENSORS = [
    ("input_layernorm", "weight"),
    *[(f"self_attn.{p}_proj", t) for p in "qkvo" for t in ("weight", "bias")],
    ("post_attention_layernorm", "weight"),
    *[(f"mlp.{p}_proj", t) for p in ("gate", "up", "down") for t in ("weight", "bias")],
]
Pointer = ctypes.c_void_p
LAYER_BYTES = len(LAYER_TENSORS) * ctypes.sizeof(Pointer)
# The C file's MAX_ROWS. Unlike the products alone (`native.MAX_ROWS`), the whole layer beats
# PyTorch's at every row count timed up to it (SmolLM2, 300-1,500 tokens of context, quiet
# box, 2026-12-07: 1.08-1.33x at 24-64 rows), since fusing removes the elementwise ops and
# dispatch whose cost grows with the rows.
MAX_ROWS = 64
STEP_SIZES = ("rows", "hidden", "heads", "kv_heads", "inter", "slot_stride", "head_stride")


class Step(ctypes.Structure):
    """`struct step` of the C file: what every layer of one decode step shares."""

    _fields_ = [
        *[(name, Pointer) for name in ("h", "cos", "sin", "ends", "work")],
        *[(name, ctypes.c_int64) for name in STEP_SIZES],
        ("eps", ctypes.c_float),
        ("threads", ctypes.c_int),
        ("kv_bf16", ctypes.c_int),
        ("table", Pointer),  # the paged cache's block table; None: the contiguous cache
        ("table_stride", ctypes.c_int64),
        ("block", ctypes.c_int64),
    ]


class DecodeLayers(Protocol):
    """Runs every decoder layer of a CPU decode step, where it `takes` the step."""

    def takes(self, h: Tensor, cache: KVCache) -> bool:
        """Whether it runs this step: h [B, 1, hidden] (the embedded tokens), host facts."""
        ...

    def __call__(
        self, h: Tensor, cos: Tensor, sin: Tensor, ends: Sequence[int], cache: KVCache
    ) -> Tensor:
        """h [B, 1, hidden] through all layers -> [B, hidden]; row i's new token goes at
        position ends[i] - 1 of slot i and attends to positions 0..ends[i] - 1; cos, sin
        [B, 1, head_dim] are the model's rotary embedding at those positions."""
        ...


class TorchLayers:
    """`DecodeLayers` that takes no step: the decoder's PyTorch loop runs every layer."""

    def takes(self, h: Tensor, cache: KVCache) -> bool:
        return False

    def __call__(
        self, h: Tensor, cos: Tensor, sin: Tensor, ends: Sequence[int], cache: KVCache
    ) -> Tensor:
        raise AssertionError("TorchLayers takes no step")


# The weights' dtypes the C layer reads: float32, or bfloat16 widened as read (its build flag).
WEIGHT_FLAGS = {torch.float32: (), torch.bfloat16: ("-DWEIGHTS_BF16",)}


@functools.cache
def layer_kernel(head_dim: int, weights: torch.dtype = torch.float32) -> Callable[..., int]:
    """`decoder_layer` for `head_dim` over `weights` of that dtype, built once per CPU
    (NativeUnavailable if not)."""
    sources = ("decoder_layer", "linear_rows", "decode_attention")
    bf16 = "_bf16" if weights is torch.bfloat16 else ""
    flags = [f"-DHEAD_DIM={head_dim}", *WEIGHT_FLAGS[weights]]
    lib = build(sources, f"decoder_layer_d{head_dim}{bf16}", flags)
    fn = lib.decoder_layer
    fn.argtypes = [ctypes.POINTER(Step), Pointer, Pointer, Pointer]
    fn.restype = ctypes.c_int
    return fn


class NativeLayers:
    """`DecodeLayers` in C for the layers `unsupported` accepts, reading the Parameters
    their modules hold at start (the engine applies `engine.weights` before)."""

    def __init__(self, layers: Sequence[nn.Module], shape: Shape) -> None:
        first: Any = layers[0]
        self.dtype = first.input_layernorm.weight.dtype  # every weight's (`unsupported`)
        # NativeUnavailable here, not mid-run
        self.kernel = layer_kernel(shape.head_dim, self.dtype)
        self.shape = shape
        self.hidden = first.self_attn.q_proj.in_features
        self.inter = first.mlp.gate_proj.out_features
        self.eps = first.input_layernorm.variance_epsilon
        # The Parameters themselves, whose pointers each step re-reads; None: no bias.
        self.tensors = [
            _tensor(layer, path, name) for layer in layers for path, name in LAYER_TENSORS
        ]
        qd, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
        self.work_per_row = 2 * (self.hidden + qd + kv + self.inter)

    def takes(self, h: Tensor, cache: KVCache) -> bool:
        return (
            0 < h.shape[0] <= MAX_ROWS
            and h.dtype is self.dtype
            and isinstance(cache, ContiguousKV | PagedKV)
            and cache.dtype in KV_DTYPES
            and cache.keys[0].is_contiguous()
            and not torch.is_grad_enabled()
        )

    def __call__(
        self, h: Tensor, cos: Tensor, sin: Tensor, ends: Sequence[int], cache: KVCache
    ) -> Tensor:
        assert isinstance(cache, ContiguousKV | PagedKV)
        rows = h.shape[0]
        # float32 throughout (a bf16 engine's hidden states too, rounded back at the end)
        h, cos, sin = (t[:, 0].float().contiguous() for t in (h, cos, sin))
        work = h.new_empty(rows * self.work_per_row)
        ends_c = (ctypes.c_int32 * rows)(*ends)
        s = self.shape
        step = Step(
            h.data_ptr(), cos.data_ptr(), sin.data_ptr(), ctypes.addressof(ends_c),
            work.data_ptr(), rows, self.hidden, s.heads, s.kv_heads, self.inter,
            *_layout(cache, ends), self.eps, torch.get_num_threads(), KV_DTYPES[cache.dtype],
            *_table(cache),
        )  # fmt: skip
        pointers = [None if t is None else t.data_ptr() for t in self.tensors]
        table = (Pointer * len(pointers))(*pointers)
        base, ref = ctypes.addressof(table), ctypes.byref(step)
        for i in range(s.layers):
            k, v = cache.keys[i], cache.values[i]  # read afresh: a paged pool grows by copy
            if self.kernel(ref, base + i * LAYER_BYTES, k.data_ptr(), v.data_ptr()):
                raise RuntimeError("decoder_layer kernel: out of memory or a bad row count")
        return h.to(self.dtype)


def _layout(cache: ContiguousKV | PagedKV, ends: Sequence[int]) -> tuple[int, int]:
    """(slot_stride, head_stride) of the cache's buffers, after checking that every row's
    positions are there: the C writes and reads trust them."""
    keys = cache.keys[0]
    if isinstance(cache, PagedKV):
        if len(ends) > len(cache.rows):
            raise IndexError(f"{len(ends)} rows in a cache of {len(cache.rows)} slots")
        held = [len(cache.rows[r]) * cache.block_size for r in range(len(ends))]
        if any(end > n for end, n in zip(ends, held, strict=True)):
            raise IndexError(f"rows up to {list(ends)} with blocks for {held} positions")
        return 0, keys.stride(0)  # the pool [kv_heads, blocks, block_size, D]
    slots, _, capacity, _ = keys.shape
    if len(ends) > slots or max(ends) > capacity:  # the C writes would land out of bounds
        raise IndexError(f"{len(ends)} rows up to {max(ends)} in a cache of {slots} x {capacity}")
    return keys.stride(0), keys.stride(1)


def _table(cache: ContiguousKV | PagedKV) -> tuple[int | None, int, int]:
    """(table pointer, its row stride, block size): the paged cache's, else none."""
    if isinstance(cache, PagedKV):
        return cache.table.data_ptr(), cache.table.stride(0), cache.block_size
    return None, 0, 0


def _tensor(layer: nn.Module, path: str, name: str) -> Tensor | None:
    return getattr(layer.get_submodule(path), name)


def unsupported(layers: Sequence[nn.Module], shape: Shape, config: Any) -> str | None:
    """Why the C layer cannot run these layers, or None where it can."""
    if config.model_type not in ARCHITECTURES or config.hidden_act != "silu":
        return f"a {config.model_type} model with {config.hidden_act} MLPs"
    if (
        shape.head_dim % 2
        or shape.heads % shape.kv_heads
        or shape.heads > MAX_GROUP * shape.kv_heads
    ):
        return f"attention of {shape.heads} heads over {shape.kv_heads} of {shape.head_dim}"
    eps = {getattr(n, "variance_epsilon", None) for layer in layers for n in _norms(layer)}
    if len(eps) != 1 or None in eps:
        return f"RMSNorms of epsilons {eps}"
    dtype = layers[0].get_parameter("input_layernorm.weight").dtype
    for layer in layers:
        for path, name in LAYER_TENSORS:
            module = layer.get_submodule(path)
            if path.endswith("_proj") and type(module) not in (nn.Linear, NativeLinear):
                return f"{path} is a {type(module).__name__}"
            t = getattr(module, name)
            if t is not None and (
                t.dtype not in WEIGHT_FLAGS
                or t.dtype != dtype
                or not t.is_cpu
                or not t.is_contiguous()
            ):
                return f"{path}.{name} is {t.dtype} on {t.device}"
    return None


def _norms(layer: Any) -> tuple[nn.Module, nn.Module]:
    return layer.input_layernorm, layer.post_attention_layernorm


def decode_layers(
    mode: str, model: nn.Module, layers: Sequence[nn.Module], shape: Shape
) -> DecodeLayers:
    """The layers `engine.cpu_decode` names (`mode`) for `model`: the C kernel where it
    applies (and builds), else PyTorch's loop."""
    if mode == "torch":
        return TorchLayers()
    reason = unsupported(layers, shape, model.config)
    if reason is not None:
        log.info("engine.cpu_decode %r: PyTorch layers (%s)", mode, reason)
        return TorchLayers()
    fused: Callable[[], DecodeLayers] = lambda: NativeLayers(layers, shape)  # noqa: E731
    return native_or("cpu_decode", mode, fused, TorchLayers)
