"""Completions served over HTTP land in the trace store token-exact, grouped into
sessions, and continuations are served token-in/token-out (the training segment)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_fakes import MODEL, WEATHER, ScriptedPolicy

import shadowrl
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.loop import run_episode
from shadowrl.agent.prompt import Renderer
from shadowrl.agent.tools import ToolSet
from shadowrl.sandbox import create_sandbox
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.queries import RequestView, get_session
from shadowrl.types import Message

DEMO_REPO = Path(shadowrl.__file__).parent / "data" / "demo" / "repo"
# a tool call written compactly: the template's re-render (json.dumps) puts spaces in it
COMPACT_CALL = '<tool_call>\n{"name":"read_file","arguments":{"path":"stats.py"}}\n</tool_call>'


def recorded(store: TraceStore, response_id: str) -> list[RequestView]:
    view = get_session(store.engine, response_id)
    assert view is not None, f"{response_id} is not in the store"
    return [r for r in view.requests if r.response_id == response_id]


def test_openai_chat_is_recorded_token_exact(
    serve: Any, tokenizer: Any, open_store: Callable[..., TraceStore]
) -> None:
    store = open_store()
    policy = ScriptedPolicy(tokenizer, "Hello there, friend.")
    client, _ = serve(policy, traces=store.writer, checkpoint="ckpt/step-3")
    resp = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        temperature=0.5,
        top_p=0.9,
        seed=7,
        stop=["there"],
    )
    (r,) = recorded(store, resp.id)  # committed before the response came back
    produced = policy._tokens(policy.samplings[0])
    assert r.prompt_ids == tuple(policy.prompts[0])
    assert r.generated_ids == tuple(produced)  # untrimmed: the wire cut it at "there"
    shown = resp.choices[0].model_extra["token_ids"]  # type: ignore[index]
    assert len(shown) < len(produced) and list(r.generated_ids[: len(shown)]) == shown
    assert r.logprobs == pytest.approx([-0.5 - k / 100 for k in range(len(produced))], abs=1e-6)
    assert r.versions == (0,) * len(produced)
    assert (r.row.temperature, r.row.top_p, r.row.seed) == (0.5, pytest.approx(0.9), 7)
    assert (r.finish_reason, r.token_exact, r.checkpoint) == ("stop", True, "ckpt/step-3")
    assert r.row.model == MODEL and r.row.total_s is not None and r.parent_id is None


def test_streamed_chat_is_committed_before_done(
    serve: Any, tokenizer: Any, sqlite_trace_store: Any
) -> None:
    policy = ScriptedPolicy(tokenizer, "One two three.")
    client, _ = serve(policy, traces=sqlite_trace_store.writer)
    chunks = list(
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "count"}], stream=True
        )
    )
    (r,) = recorded(sqlite_trace_store, chunks[0].id)
    assert r.generated_ids == tuple(policy._tokens(policy.samplings[0]))
    assert r.row.first_token_s is not None and r.row.first_token_s <= r.row.total_s


def _turn2(schemas: list[dict[str, Any]], first: list[dict[str, Any]], result: str) -> list[Any]:
    """What a client sends next: the call echoed with compact arguments, then its result."""
    call = {
        "id": "call_x",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path":"stats.py"}'},
    }
    return [
        *first,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_x", "content": result},
    ]


def test_continuation_is_the_training_segment_token_for_token(
    serve: Any, tokenizer: Any, sqlite_trace_store: Any
) -> None:
    """The issue's case: a tool call written without spaces. run_episode's turn-2 prompt
    (its segment so far) is what the server must feed the model for the same chat."""
    config = AgentConfig(max_turns=2)
    toolset = ToolSet.from_names(config.tools)
    episode_policy = ScriptedPolicy(tokenizer, COMPACT_CALL)
    sandbox = create_sandbox(DEMO_REPO, backend="local")
    try:
        traj = asyncio.run(
            run_episode(
                episode_policy,
                sandbox,
                "Fix it.",
                tokenizer=tokenizer,
                config=config,
                tools=toolset,
            )
        )
    finally:
        sandbox.close()
    training_turn2 = episode_policy.prompts[1]
    assert list(traj.segments[0].token_ids[: len(training_turn2)]) == training_turn2

    schemas = toolset.schemas()
    first = [m.to_openai() for m in traj.messages[:2]]
    policy = ScriptedPolicy(tokenizer, COMPACT_CALL)
    client, _ = serve(policy, traces=sqlite_trace_store.writer)
    r1 = client.chat.completions.create(model=MODEL, messages=first, tools=schemas)
    assert r1.choices[0].message.tool_calls, "the compact call parses"
    messages = _turn2(schemas, first, traj.messages[3].content)
    r2 = client.chat.completions.create(model=MODEL, messages=messages, tools=schemas)

    assert policy.prompts[0] == episode_policy.prompts[0]
    assert policy.prompts[1] == training_turn2
    rerendered = Renderer(tokenizer, schemas).prompt_ids(
        [
            *traj.messages[:2],
            Message("assistant", "", traj.messages[2].tool_calls),
            traj.messages[3],
        ]
    )
    assert rerendered != training_turn2  # without token-in/token-out the test would fail
    (a,), (b,) = recorded(sqlite_trace_store, r1.id), recorded(sqlite_trace_store, r2.id)
    assert b.prompt_ids == tuple(training_turn2) and b.token_exact
    assert (b.parent_id, b.session_id) == (a.id, a.session_id)
    assert b.row.tool_calls == [
        {
            **r2.choices[0].message.tool_calls[0].model_dump(include={"id", "type"}),
            "function": {"name": "read_file", "arguments": json.dumps({"path": "stats.py"})},
        }
    ]


def test_each_choice_is_a_branch_and_edited_history_is_not_token_exact(
    serve: Any, tokenizer: Any, sqlite_trace_store: Any
) -> None:
    policy = ScriptedPolicy(tokenizer, "Sure.")
    client, _ = serve(policy, traces=sqlite_trace_store.writer)
    first = [{"role": "user", "content": "hello"}]
    r1 = client.chat.completions.create(model=MODEL, messages=first, n=2, seed=1)
    a0, a1 = recorded(sqlite_trace_store, r1.id)
    assert (a0.row.choice_index, a1.row.choice_index) == (0, 1) and a0.session_id == a1.session_id
    follow = {"role": "user", "content": "more"}
    r2 = client.chat.completions.create(
        model=MODEL, messages=[*first, {"role": "assistant", "content": "Sure."}, follow]
    )
    (b,) = recorded(sqlite_trace_store, r2.id)
    assert b.parent_id in (a0.id, a1.id) and b.session_id == a0.session_id and b.token_exact
    parent = a0 if b.parent_id == a0.id else a1
    assert b.prompt_ids[: len(parent.prompt_ids) + len(parent.generated_ids)] == (
        *parent.prompt_ids,
        *parent.generated_ids,
    )

    edited = [*first, {"role": "assistant", "content": "Certainly not."}, follow]
    r3 = client.chat.completions.create(model=MODEL, messages=edited)
    (c,) = recorded(sqlite_trace_store, r3.id)
    assert not c.token_exact and c.parent_id is None and c.session_id != a0.session_id
    assert list(c.prompt_ids) == Renderer(tokenizer).prompt_ids(
        [Message("user", "hello"), Message("assistant", "Certainly not."), Message("user", "more")]
    )


def test_session_header_groups_chat_and_completions(
    serve: Any, tokenizer: Any, sqlite_trace_store: Any
) -> None:
    policy = ScriptedPolicy(tokenizer, "ok")
    client, url = serve(policy, traces=sqlite_trace_store.writer)
    headers = {"X-Session-Id": "my-session"}
    c = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "a"}], extra_headers=headers
    )
    k = client.completions.create(
        model=MODEL, prompt=["x y", "z"], n=2, max_tokens=4, extra_headers=headers
    )
    view = get_session(sqlite_trace_store.engine, "my-session")
    assert view is not None and {r.response_id for r in view.requests} == {c.id, k.id}
    comps = [r for r in view.requests if r.response_id == k.id]
    assert [r.row.endpoint for r in comps] == ["completions"] * 4
    assert sorted(r.prompt_ids for r in comps) == sorted(map(tuple, policy.prompts[1:]))
    long = httpx.post(
        f"{url}/v1/completions",
        json={"model": MODEL, "prompt": "x"},
        headers={"X-Session-Id": "s" * 65},
    )
    assert long.status_code == 400 and long.json()["error"]["param"] == "X-Session-Id"


def test_forced_tool_call_tokens_are_recorded_as_forced(
    serve: Any, tokenizer: Any, sqlite_trace_store: Any
) -> None:
    policy = ScriptedPolicy(tokenizer, '{"city": "Oslo"}}\n</tool_call>')
    client, _ = serve(policy, traces=sqlite_trace_store.writer)
    resp = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "weather?"}],
        tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    (r,) = recorded(sqlite_trace_store, resp.id)
    forced = tokenizer.encode(
        '<tool_call>\n{"name": "get_weather", "arguments": ', add_special_tokens=False
    )
    assert r.forced_ids == tuple(forced) and r.generated_ids[: len(forced)] == tuple(forced)
    assert policy.prompts[0] == [*r.prompt_ids, *forced]  # the prompt is recorded without them
    assert r.row.tools == [WEATHER] and r.finish_reason == "tool_calls"
    assert r.row.tool_calls[0]["function"]["name"] == "get_weather"


def test_a_reply_the_store_cannot_hold_is_not_delivered(
    serve: Any, tokenizer: Any, sqlite_trace_store: Any
) -> None:
    _, url = serve(ScriptedPolicy(tokenizer, "lost"), traces=sqlite_trace_store.writer)
    sqlite_trace_store.writer.close()  # every later write fails
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(f"{url}/v1/chat/completions", json=body)
    assert r.status_code == 500 and "lost" not in r.text
