"""Where an engine's time goes: its prefill calls and decode steps timed in place.

`Phases(engine)` wraps the engine's `decoder.prefill` and `stepper.decode` so every call
is timed and its shape recorded, outer calls only: on CPU a prefill of N prompts calls
itself once per prompt, and those inner calls are part of the outer one. `floors()` then
divides by the floor of those very shapes (`_floor.py`: the model's matrix products timed
alone on this machine), and by a second floor that adds what attention must do at the
least: a prefill's attention products at the rate the model's products ran in that call
(compute-bound), a decode step's read of its rows' keys and values at the rate
`torch.sum` streams memory (bandwidth-bound). Used by
`engine_vs_hf.py` (one batch of prompts) and `agent_rollouts.py` (a whole agent eval).
"""

from __future__ import annotations

import time
from typing import Any

import torch

from _floor import Floor, KVFloor, attention_flops


class Phases:
    """Time spent in one engine's prefill and decode calls, with their shapes."""

    def __init__(self, engine: Any) -> None:
        self.model, self.shape = engine.model, engine.decoder.shape
        self.prefill_s = self.decode_s = 0.0
        self.shapes: list[tuple[list[int], Any]] = []  # per prefill call: lengths, starts or None
        self.steps: list[tuple[int, float]] = []  # (rows, seconds) per decode step
        self.kv_positions: list[int] = []  # cached positions each decode step attends to
        self._prefill, self.cache = engine.decoder.prefill, engine.cache  # unwrapped: replays
        self._inside = False  # the engine thread is in a timed call: count only the outer one
        engine.decoder.prefill = self._timed(engine.decoder.prefill, prefill=True)
        engine.stepper.decode = self._timed(engine.stepper.decode, prefill=False)

    def _timed(self, fn: Any, *, prefill: bool) -> Any:
        def call(*args: Any) -> Any:
            if self._inside:  # on CPU a prefill of N prompts calls itself once per prompt
                return fn(*args)
            self._inside = True
            start = time.perf_counter()
            try:
                out = fn(*args)
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
            finally:
                self._inside = False
            seconds = time.perf_counter() - start
            if prefill:
                self.prefill_s += seconds
                given = args[3] if len(args) > 3 else None  # positions already in the cache
                self.shapes.append(
                    ([len(p) for p in args[0]], None if given is None else list(given))
                )
            else:
                self.decode_s += seconds
                self.steps.append((len(args[0]), seconds))
                self.kv_positions.append(sum(r.cached + 1 for r in args[0]))
            return out

        return call

    @property
    def prefills(self) -> list[tuple[int, int]]:
        """(real prompt tokens, prompts) per prefill call."""
        return [(sum(lengths), len(lengths)) for lengths, _ in self.shapes]

    def _attention_flops(self) -> list[float]:
        """Each prefill call's least attention work (`_floor.attention_flops`)."""
        return [
            sum(attention_flops(self.shape, n, s) for n, s in _with_starts(lengths, starts))
            for lengths, starts in self.shapes
        ]

    def replay_prefills(self) -> float:
        """Seconds the recorded prefill calls take again, one after another, with nothing
        else running: the same lengths after the same cached positions (random tokens, the
        cache's old contents as the cached ones), into the first slots of the engine's cache.
        Call it once the engine has nothing running. The eval's prefill time over this is
        what the harness's own work on the same cores cost the engine."""
        vocab = self.model.config.vocab_size
        total = 0.0
        self._inside = True  # a replayed call's own inner calls (per prompt on CPU) are not timed
        try:
            with torch.inference_mode():
                for lengths, starts in self.shapes:
                    slots = list(range(len(lengths)))
                    ends = [s + n + 1 for n, s in _with_starts(lengths, starts)]
                    self.cache.prepare(slots, [0] * len(slots), ends)
                    prompts = [torch.randint(3, vocab, (n,)).tolist() for n in lengths]
                    start = time.perf_counter()
                    self._prefill(prompts, slots, self.cache, starts)
                    total += time.perf_counter() - start
        finally:
            self._inside = False
        return total

    def spent(self) -> dict[str, float]:
        steps = len(self.steps)
        return {
            "prefill_s": self.prefill_s,
            "prefill_tokens": sum(tokens for tokens, _ in self.prefills),
            "prefill_calls": len(self.shapes),
            "decode_s": self.decode_s,
            "decode_steps": steps,
            "decode_rows_mean": sum(r for r, _ in self.steps) / max(steps, 1),
            "ms_per_decode_step": 1000 * self.decode_s / max(steps, 1),
        }

    def floors(self) -> dict[str, float]:
        """The floor of the recorded calls and the engine's time as a multiple of it."""
        floor = Floor(self.model)
        widest = max(r for r, _ in self.steps)
        full = [s for rows, s in self.steps if rows == widest]
        out = {
            "full_batch_rows": widest,
            "full_batch_step_ms": 1000 * sum(full) / len(full),
            "full_batch_floor_ms": floor.ms(widest),
            "decode_floor_s": floor.decode_s(r for r, _ in self.steps),
            "prefill_floor_s": floor.prefill_s(self.prefills),
        }
        out["full_batch_multiple"] = out["full_batch_step_ms"] / out["full_batch_floor_ms"]
        out["decode_multiple"] = self.decode_s / out["decode_floor_s"]
        out["prefill_multiple"] = self.prefill_s / out["prefill_floor_s"]
        return out | self._attention_floors(floor)

    def _attention_floors(self, floor: Floor) -> dict[str, float]:
        """The floors with attention's least work added, and the engine's multiples of them."""
        size = self.cache.dtype.itemsize  # what the cache stores (`engine.kv_dtype`)
        kv = KVFloor(self.shape)
        calls, attention = self.prefills, self._attention_flops()
        products = [floor.flops(*call) for call in calls]
        prefill = sum(
            floor.ms(*call) * (1 + a / p)
            for call, p, a in zip(calls, products, attention, strict=True)
        ) / 1e3  # fmt: skip
        decode = floor.decode_s(r for r, _ in self.steps) + kv.ms(self.kv_positions, size) / 1e3
        return {
            "stream_gbs": kv.gbs,
            "prefill_attention_share": sum(attention) / (sum(products) + sum(attention)),
            "prefill_floor_with_attention_s": prefill,
            "decode_floor_with_kv_s": decode,
            "prefill_multiple_with_attention": self.prefill_s / prefill,
            "decode_multiple_with_kv": self.decode_s / decode,
        }


def _with_starts(lengths: list[int], starts: Any) -> zip[tuple[int, int]]:
    """(new tokens, cached positions) of each prompt of a prefill call (None: none cached)."""
    return zip(lengths, starts or [0] * len(lengths), strict=True)
