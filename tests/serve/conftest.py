"""Fixtures of the server tests: the tiny tokenizer, servers on free ports, the engine."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from serve_fakes import MODEL

from shadowrl.models import load_tokenizer
from shadowrl.serve.server import create_app
from shadowrl.serve.threaded import serve_in_thread


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_tokenizer("tiny")


@pytest.fixture
def serve(tokenizer: Any) -> Iterator[Any]:
    """`serve(policy, **create_app kwargs)` -> (openai client, base url); servers stop at exit."""
    stack: list[Any] = []

    def start(policy: Any, **kw: Any) -> tuple[openai.OpenAI, str]:
        kw.setdefault("max_context_tokens", 2048)
        ctx = serve_in_thread(create_app(policy, tokenizer, MODEL, **kw))
        url = ctx.__enter__()
        stack.append(ctx)
        return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0), url

    yield start
    for ctx in reversed(stack):
        ctx.__exit__(None, None, None)


@pytest.fixture(scope="module")
def engine() -> Iterator[Any]:
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import tiny_model

    model, tok = tiny_model(seed=0)
    config = EngineConfig(max_batch=8, max_seq_len=1024, initial_kv_len=128)
    with Engine(model, tok, config) as eng:
        yield eng
