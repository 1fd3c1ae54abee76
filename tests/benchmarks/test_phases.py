"""benchmarks/_phases.py: each engine call timed once, however the engine nests its calls."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Decoder:
    """Prefills like the CPU decoder: several prompts, one call to itself per prompt."""

    shape = SimpleNamespace(layers=2, heads=3, kv_heads=1, head_dim=4)

    def prefill(self, prompts: list[list[int]], slots: list[int], *rest: Any) -> None:
        if len(prompts) > 1:
            for p, s in zip(prompts, slots, strict=True):
                self.prefill([p], [s])
            return
        time.sleep(0.01)


class Stepper:
    def decode(self, requests: list[Any], span: int) -> None:
        time.sleep(0.01)


class Cache:
    def prepare(self, *args: Any) -> None:
        pass


class Engine:
    def __init__(self) -> None:
        self.model = SimpleNamespace(config=SimpleNamespace(vocab_size=10))
        self.decoder, self.stepper, self.cache = Decoder(), Stepper(), Cache()


def rows(*cached: int) -> list[Any]:
    return [SimpleNamespace(cached=n) for n in cached]


@pytest.fixture
def phases(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import _phases

    return _phases


def test_a_prefill_that_calls_itself_per_prompt_counts_once(phases: Any) -> None:
    engine = Engine()
    timer = phases.Phases(engine)
    start = time.perf_counter()
    engine.decoder.prefill([[1, 2, 3], [4, 5]], [0, 1])
    engine.stepper.decode(rows(3, 2), 4)
    engine.decoder.prefill([[6]], [2], None, [7])
    wall = time.perf_counter() - start
    spent = timer.spent()
    assert timer.prefills == [(5, 2), (1, 1)]  # the outer calls' shapes only
    assert timer.shapes == [([3, 2], None), ([1], [7])]
    assert timer.kv_positions == [(3 + 1) + (2 + 1)]  # each row attends to its new token too
    assert spent["prefill_calls"] == 2 and spent["prefill_tokens"] == 6
    assert spent["decode_steps"] == 1 and spent["decode_rows_mean"] == 2
    assert spent["prefill_s"] + spent["decode_s"] <= wall  # nothing counted twice


def test_attention_flops_count_every_cached_and_causal_pair(phases: Any) -> None:
    from _floor import attention_flops

    shape = Decoder.shape
    per_pair = 4 * 2 * 3 * 4  # q.k and the weighted v, each a multiply-add, every head and layer
    assert attention_flops(shape, 1, 0) == per_pair  # a token attends to itself
    assert attention_flops(shape, 3, 0) == 6 * per_pair  # 1 + 2 + 3
    assert attention_flops(shape, 2, 10) == (20 + 3) * per_pair


def test_a_replay_is_not_counted_as_the_evals_time(phases: Any) -> None:
    engine = Engine()
    timer = phases.Phases(engine)
    engine.decoder.prefill([[1, 2, 3], [4, 5]], [0, 1])
    before = timer.spent()
    alone = timer.replay_prefills()
    assert alone >= 0.02  # both prompts ran again, one sleep each
    assert timer.spent() == before and len(timer.shapes) == 1
