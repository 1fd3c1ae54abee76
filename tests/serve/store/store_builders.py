"""Small record builders shared by the trace-store tests (and the crash-test child)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shadowrl.serve.store import RequestRecord


def request(
    rid: str,
    session_id: str,
    prompt: Sequence[int] = (1, 2, 3),
    generated: Sequence[int] = (4, 5),
    parent_id: str | None = None,
    **extra: Any,
) -> RequestRecord:
    """A chat request whose logprobs and versions are derived from its tokens (checkable)."""
    return RequestRecord(
        id=rid,
        response_id=extra.pop("response_id", rid),
        session_id=session_id,
        endpoint="chat",
        model="tiny-test",
        prompt_ids=tuple(prompt),
        generated_ids=tuple(generated),
        logprobs=tuple(-t / 8 for t in generated),  # exact in float32
        versions=tuple(t % 3 for t in generated),
        finish_reason=extra.pop("finish_reason", "stop"),
        temperature=0.7,
        top_p=0.95,
        seed=11,
        parent_id=parent_id,
        **extra,
    )
