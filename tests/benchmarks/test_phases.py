"""benchmarks/_phases.py: each engine call timed once, however the engine nests its calls."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Decoder:
    """Prefills like the CPU decoder: several prompts, one call to itself per prompt."""

    def prefill(self, prompts: list[list[int]], slots: list[int], *rest: Any) -> None:
        if len(prompts) > 1:
            for p, s in zip(prompts, slots, strict=True):
                self.prefill([p], [s])
            return
        time.sleep(0.01)


class Stepper:
    def decode(self, requests: list[Any], span: int) -> None:
        time.sleep(0.01)


class Engine:
    def __init__(self) -> None:
        self.model, self.decoder, self.stepper = None, Decoder(), Stepper()


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
    engine.stepper.decode([0, 1], 4)
    engine.decoder.prefill([[6]], [2])
    wall = time.perf_counter() - start
    spent = timer.spent()
    assert timer.prefills == [(5, 2), (1, 1)]  # the outer calls' shapes only
    assert spent["prefill_calls"] == 2 and spent["prefill_tokens"] == 6
    assert spent["decode_steps"] == 1 and spent["decode_rows_mean"] == 2
    assert spent["prefill_s"] + spent["decode_s"] <= wall  # nothing counted twice
