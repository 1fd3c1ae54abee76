"""How many project files one chat request runs through (issue 31: at most four).

The server runs in this process (`serve_in_thread`); a profile function set on every
thread started after it (the server's, its workers') and on this one records the
`src/shadowrl` files whose functions are called while one `/v1/chat/completions`
request is in flight, after a first request has warmed up lazy imports. The policy
is the tests' scripted one, so what is counted is the serving path: routes, request
handling, rendering and parsing, not the engine behind the `Policy` protocol.

A plain chat request, streamed or not, reads through four: `serve/app.py` (route, key
check, hang-up watch), `serve/openai_api.py` (wire format), `serve/server.py` (what
the request does) and `agent/prompt.py` (the harness's rendering). An optional part
adds its own module and nothing else: keys the key ring (`serve/auth.py`), tools the
harness's parser (`agent/parsing.py`). (It was eight files for a plain request before
2026-12-03: `auth.py`, `disconnect.py`, `prepare.py` and `text.py` besides these.)
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import pytest
from serve_fakes import MODEL, ScriptedPolicy

import shadowrl
from shadowrl.serve.auth import KeyRing, add_key

SRC = str(Path(shadowrl.__file__).parent) + "/"
GOAL = 4
CORE = {"serve/app.py", "serve/openai_api.py", "serve/server.py", "agent/prompt.py"}
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


class FilesRun:
    """The project files whose functions are called while `on` is set, in any thread."""

    def __init__(self) -> None:
        self.on = False
        self.files: dict[str, set[str]] = {}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.on and event == "call" and frame.f_code.co_filename.startswith(SRC):
            name = frame.f_code.co_filename.removeprefix(SRC)
            self.files.setdefault(name, set()).add(frame.f_code.co_name)


def files_of_one_chat_request(
    serve: Any,
    tokenizer: Any,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    **app: Any,
) -> dict[str, set[str]]:
    """project file -> the functions of it that one (warm) chat request called."""
    seen = FilesRun()
    threading.setprofile(seen)  # threads started from here on: the server's
    sys.setprofile(seen)
    try:
        _, url = serve(ScriptedPolicy(tokenizer, "hello"), **app)
        body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], **(body or {})}
        with httpx.Client(base_url=url, timeout=60, headers=headers) as http:
            assert http.post("/v1/chat/completions", json=body).status_code == 200  # warm-up
            seen.on = True
            reply = http.post("/v1/chat/completions", json=body)
            seen.on = False
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert reply.status_code == 200 and "hello" in reply.text
    assert "serve/openai_api.py" in seen.files  # it saw the request
    return seen.files


def listing(files: dict[str, set[str]]) -> str:
    return "\n".join(f"{f}: {', '.join(sorted(fns))}" for f, fns in sorted(files.items()))


@pytest.mark.parametrize("stream", [False, True])
def test_one_chat_request_runs_at_most_four_project_files(
    serve: Any, tokenizer: Any, stream: bool
) -> None:
    files = files_of_one_chat_request(serve, tokenizer, {"stream": stream})
    assert len(files) <= GOAL and set(files) == CORE, f"{len(files)} files:\n{listing(files)}"


def test_keys_and_tools_each_add_only_their_own_module(
    serve: Any, tokenizer: Any, tmp_path: Path
) -> None:
    _, key = add_key(tmp_path / "keys.json", "alice")
    auth = {"Authorization": f"Bearer {key}"}
    keyed = files_of_one_chat_request(
        serve, tokenizer, None, auth, keys=KeyRing(tmp_path / "keys.json")
    )
    assert set(keyed) == CORE | {"serve/auth.py"}, listing(keyed)
    assert set(keyed["serve/auth.py"]) <= {"lookup", "digest"}  # the ring, not the checks
    tools = files_of_one_chat_request(serve, tokenizer, {"tools": [TOOL]})
    assert set(tools) == CORE | {"agent/parsing.py"}, listing(tools)
