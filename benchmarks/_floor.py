"""The floor a benchmark divides by: the model's own matrix products, timed alone.

For an engine's run, the floor of a decode step at B rows is the time of every Linear
layer of its model (LM head included) applied to a [B, in] input, one after another,
in the engine's own precision (an int8 layer's floor includes quantising its input);
a prefill call of T real prompt tokens over N prompts has the floor of the layers at
T rows and the LM head at N rows. Attention over the KV cache, norms, rotary, sampling
and Python are what the engine adds on top: a multiple of 1.0 is the floor itself.
Timed on this CPU in the same run as the engine, each shape once (decode shapes: best of
`repeats` after a warm-up).

A decode step must also read every key and value its rows attend to, once: `KVFloor` is
those bytes at the rate `torch.sum` streams memory on this CPU in the same run. At 32 rows
of ~900 tokens SmolLM2's fp32 cache is ~1.3 GB a step, as long to read as the products
take, so the product floor alone is not reachable there; decode benchmarks report both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from shadowrl.inference.precision import Fp8Linear, Int8Linear

PRODUCTS = (nn.Linear, Int8Linear, Fp8Linear)


def products(model: Any) -> tuple[list[Any], Any]:
    """The decoder's Linear-like layers in forward order, and its LM head."""
    head = model.lm_head
    body = [m for m in model.model.modules() if isinstance(m, PRODUCTS)]
    return body, head


def _best_ms(run: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


class Floor:
    """Product times of one model at each row count asked for (memoised)."""

    def __init__(self, model: Any, repeats: int = 3) -> None:
        self.body, self.head = products(model)
        self._macs = sum(m.in_features * m.out_features for m in self.body)  # per row
        self.repeats = repeats
        self._ms: dict[tuple[int, int], float] = {}
        param = self.head.weight
        self.device, self.dtype = param.device, param.dtype

    def ms(self, rows: int, head_rows: int | None = None) -> float:
        """ms for every body layer at `rows` rows and the LM head at `head_rows` (= rows)."""
        head_rows = rows if head_rows is None else head_rows
        key = (rows, head_rows)
        if key not in self._ms:
            self._ms[key] = self._time(rows, head_rows)
        return self._ms[key]

    def _time(self, rows: int, head_rows: int) -> float:
        inputs = {
            m.in_features: torch.randn(rows, m.in_features, device=self.device, dtype=self.dtype)
            for m in self.body
        }
        head_x = torch.randn(head_rows, self.head.in_features, device=self.device, dtype=self.dtype)

        def run() -> None:
            for m in self.body:
                m(inputs[m.in_features])
            self.head(head_x)
            if self.device.type == "cuda":
                torch.cuda.synchronize()

        with torch.inference_mode():
            if rows <= 256:  # a prefill-sized shape is timed once: it is seconds long
                run()  # warm-up
                return _best_ms(run, self.repeats)
            return _best_ms(run, 1)

    def flops(self, rows: int, head_rows: int) -> float:
        """The products' multiply-adds (x 2) at `rows` rows and the LM head at `head_rows`."""
        head = self.head.in_features * self.head.out_features
        return 2.0 * (self._macs * rows + head * head_rows)

    def decode_s(self, steps_rows: Iterable[int]) -> float:
        """The floor of decode steps of the given row counts, in seconds."""
        return sum(self.ms(rows) for rows in steps_rows) / 1e3

    def prefill_s(self, calls: Iterable[tuple[int, int]]) -> float:
        """The floor of prefill calls of (real prompt tokens, prompts), in seconds."""
        return sum(self.ms(tokens, prompts) for tokens, prompts in calls) / 1e3


class KVFloor:
    """ms to read the keys and values of rows of given lengths once, at the rate `torch.sum`
    streams a buffer far larger than the caches (best of `repeats`, measured once)."""

    def __init__(self, shape: Any, mb: int = 512, repeats: int = 3) -> None:
        self.per_position = 2 * shape.layers * shape.kv_heads * shape.head_dim  # k and v
        buffer = torch.ones(mb * 2**20 // 4)
        buffer.sum()  # warm-up: pages touched
        self.gbs = buffer.numel() * 4 / _best_ms(buffer.sum, repeats) / 1e6

    def ms(self, lengths: Iterable[int], element_size: int) -> float:
        return self.per_position * sum(lengths) * element_size / self.gbs / 1e6


def attention_flops(shape: Any, new: int, start: int) -> float:
    """Multiply-adds (x 2) of `new` query positions after `start` cached ones attending
    causally (q.k and the weighted sum of v, every head and layer)."""
    pairs = new * start + new * (new + 1) / 2
    return 4.0 * shape.layers * shape.heads * shape.head_dim * pairs


def cpu_flags() -> dict[str, Any]:
    """Whether this CPU has the AVX-512 / AMX features the kernels choose between."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read().split("flags")[1].split("\n")[0].split()
    except (OSError, IndexError):
        flags = []
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16")
    return {
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_flags": {f: f in flags for f in wanted},
        "threads": torch.get_num_threads(),
    }
