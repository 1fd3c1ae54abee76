"""Shared fixtures: the real SmolLM2 tokenizer (cached) and the demo repo in a real sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from shadowrl.agent.demo import DEMO_DIR
from shadowrl.sandbox import create_sandbox


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    from shadowrl.models import load_tokenizer

    return load_tokenizer("smollm2")


@pytest.fixture
def demo_sandbox() -> Iterator[Any]:
    """The demo task's repo in the `local` backend (a private copy; fast everywhere)."""
    sb = create_sandbox(DEMO_DIR / "repo", backend="local")
    yield sb
    sb.close()
