"""Server hardening, each found by a real client: bad tool schemas, hang-ups, empty and
cut stop strings, top logprobs, forced tool calls, usage for n > 1, caps, odd bodies.

Over real HTTP against a scripted policy (a fake behind `Policy`) or the tiny random
model behind the real engine (the `engine` fixture).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import openai
import pytest
from serve_fakes import MODEL, WEATHER, ScriptedPolicy

from shadowrl.agent.prompt import render_prompt
from shadowrl.types import Message, SamplingParams

HI = [{"role": "user", "content": "hi"}]


def _tool(**function: Any) -> dict[str, Any]:
    return {"type": "function", "function": function}


def test_bad_tool_schemas_are_400s_naming_the_field_on_a_kept_alive_connection(
    serve: Any, tokenizer: Any
) -> None:
    _, url = serve(ScriptedPolicy(tokenizer, "ok"))
    bad = {
        "tools.0.function": {"type": "function"},
        "tools.0.function.name": _tool(description="no name"),
        "tools.0.function.parameters": _tool(name="f", parameters="not an object"),
        "tools.0.function.parameters.properties": _tool(name="f", parameters={"properties": []}),
    }
    with httpx.Client(base_url=url) as http:
        ports = set()
        for field, tool in bad.items():
            r = http.post(
                "/v1/chat/completions", json={"model": MODEL, "messages": HI, "tools": [tool]}
            )
            assert r.status_code == 400, (field, r.text)
            error = r.json()["error"]
            assert error["param"] == field and field in error["message"]
            ports.add(r.extensions["network_stream"].get_extra_info("client_addr")[1])
        ok = http.post(
            "/v1/chat/completions", json={"model": MODEL, "messages": HI, "tools": [WEATHER]}
        )
        ports.add(ok.extensions["network_stream"].get_extra_info("client_addr")[1])
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "ok"
    assert len(ports) == 1  # every answer came back on the one keep-alive connection


def test_a_call_to_a_tool_with_a_union_typed_argument_is_parsed(serve: Any, tokenizer: Any) -> None:
    union = {"type": "object", "properties": {"city": {"type": ["string", "null"]}}}
    tool = _tool(name="get_weather", parameters=union)
    reply = '<tool_call>\n{"name": "get_weather", "arguments": {"city": null}}\n</tool_call>'
    client, _ = serve(ScriptedPolicy(tokenizer, reply))
    out = client.chat.completions.create(model=MODEL, messages=HI, tools=[tool])
    (call,) = out.choices[0].message.tool_calls or []
    assert json.loads(call.function.arguments) == {"city": None}


def test_a_non_streaming_client_that_hangs_up_cancels_its_generation(
    serve: Any, tokenizer: Any
) -> None:
    policy = ScriptedPolicy(tokenizer, "word " * 400, delay_s=0.01)
    _, url = serve(policy)
    body = {"model": MODEL, "messages": HI, "max_tokens": 1000}
    with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its socket
        httpx.post(f"{url}/v1/chat/completions", json=body, timeout=0.3)
    gone = threading.Event()
    for _ in range(500):  # until the generation is over, however it ended
        if policy.samplings and policy.in_flight == 0:
            break
        gone.wait(0.02)
    assert policy.cancelled == 1
    assert 0 < policy.yielded < 400  # stopped early, not decoded to the end for nobody


def test_an_empty_stop_string_is_ignored(serve: Any, tokenizer: Any, engine: Any) -> None:
    client, _ = serve(engine)
    ask = dict(model=MODEL, prompt=[5, 6, 7], max_tokens=8, temperature=0)
    plain = client.completions.create(**ask).choices[0].model_extra or {}
    empty = client.completions.create(**ask, stop=["", "\x00never"]).choices[0].model_extra or {}
    assert len(plain["token_ids"]) > 1
    assert empty["token_ids"] == plain["token_ids"]
    direct = asyncio.run(engine.generate([5, 6, 7], SamplingParams(8, 0.0, stop=("",))))
    assert list(direct.token_ids) == plain["token_ids"]  # the engine ignores "" by itself too


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_cut_at_a_stop_string_returns_only_its_tokens(
    serve: Any, tokenizer: Any, stream: bool
) -> None:
    client, _ = serve(ScriptedPolicy(tokenizer, "Hello world.\nEND more text"))
    ask: dict[str, Any] = dict(model=MODEL, messages=HI, stop=["END"], logprobs=True)
    kept = tokenizer.encode("Hello world.\n", add_special_tokens=False)
    if stream:
        chunks = list(
            client.chat.completions.create(
                **ask, stream=True, stream_options={"include_usage": True}
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        entries = [
            e
            for c in chunks
            if c.choices and c.choices[0].logprobs
            for e in c.choices[0].logprobs.content or []
        ]
        finals = [c.choices[0] for c in chunks if c.choices and c.choices[0].finish_reason]
        ids, used = (finals[0].model_extra or {})["token_ids"], chunks[-1].usage
    else:
        out = client.chat.completions.create(**ask)
        choice = out.choices[0]
        text, entries = choice.message.content, choice.logprobs.content or []
        ids, used = (choice.model_extra or {})["token_ids"], out.usage
    assert text == "Hello world.\n"
    assert ids == kept and used is not None and used.completion_tokens == len(kept)
    assert "".join(e.token for e in entries) == "Hello world.\n"
    assert [e.logprob for e in entries] == pytest.approx([-0.5 - k / 100 for k in range(len(kept))])


def test_top_logprobs_are_the_engines_alternatives(serve: Any, tokenizer: Any, engine: Any) -> None:
    client, _ = serve(engine)
    ask: dict[str, Any] = dict(model=MODEL, messages=HI, max_tokens=6, temperature=0)
    out = client.chat.completions.create(**ask, logprobs=True, top_logprobs=4)
    prompt = render_prompt(tokenizer, [Message("user", "hi")], None)
    eos = (tokenizer.eos_token_id,)
    direct = asyncio.run(
        engine.generate(prompt, SamplingParams(6, 0.0, stop_token_ids=eos, top_logprobs=4))
    )
    entries = out.choices[0].logprobs.content or []
    assert len(entries) == len(direct.token_ids) > 0
    for entry, tid, top in zip(entries, direct.token_ids, direct.top_logprobs, strict=True):
        assert [t.token for t in entry.top_logprobs] == [tokenizer.decode([t]) for t, _ in top]
        assert [t.logprob for t in entry.top_logprobs] == pytest.approx(
            [x for _, x in top], abs=1e-4
        )
        assert entry.token == tokenizer.decode([tid]) == entry.top_logprobs[0].token  # greedy
    streamed = [
        t.logprob
        for c in client.chat.completions.create(**ask, logprobs=True, top_logprobs=4, stream=True)
        if c.choices and c.choices[0].logprobs
        for e in c.choices[0].logprobs.content or []
        for t in e.top_logprobs
    ]
    assert streamed == pytest.approx([t.logprob for e in entries for t in e.top_logprobs])
    legacy = client.completions.create(
        model=MODEL,
        prompt=prompt,
        max_tokens=6,
        temperature=0,
        logprobs=3,
        extra_body={"return_tokens_as_token_ids": True},
    ).choices[0]
    assert legacy.logprobs is not None and legacy.logprobs.top_logprobs is not None
    for tops, tid, top in zip(
        legacy.logprobs.top_logprobs, direct.token_ids, direct.top_logprobs, strict=True
    ):
        assert list(tops) == [f"token_id:{t}" for t, _ in top[:3]]
        assert max(tops, key=tops.__getitem__) == f"token_id:{tid}"


def _forced(text: str, tokenizer: Any) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


@pytest.mark.parametrize("stream", [False, True])
def test_tool_choice_required_forces_a_tool_call(serve: Any, tokenizer: Any, stream: bool) -> None:
    policy = ScriptedPolicy(
        tokenizer, 'get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    )
    client, _ = serve(policy)
    ask: dict[str, Any] = dict(model=MODEL, messages=HI, tools=[WEATHER], tool_choice="required")
    ask.update(logprobs=True, top_logprobs=2)  # a policy recording no alternatives: none shown
    forced = _forced('<tool_call>\n{"name": "', tokenizer)
    if stream:
        chunks = list(client.chat.completions.create(**ask, stream=True))
        calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
        last = chunks[-1].choices[0]
    else:
        last = client.chat.completions.create(**ask).choices[0]
        calls = list(last.message.tool_calls or [])
        assert last.logprobs and [e.top_logprobs for e in last.logprobs.content or []] == [
            [] for _ in (last.model_extra or {})["token_ids"]
        ]
    assert [(c.function.name, json.loads(c.function.arguments or "")) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert last.finish_reason == "tool_calls"
    prompt = render_prompt(tokenizer, [Message("user", "hi")], [WEATHER])
    assert policy.prompts == [prompt + forced]  # forced tokens follow the prompt ...
    extra = last.model_extra or {}
    assert extra["token_ids"][: len(forced)] == forced and extra["forced_tokens"] == len(forced)


def test_a_named_tool_choice_forces_that_function(serve: Any, tokenizer: Any) -> None:
    other = _tool(name="get_time", parameters={"type": "object", "properties": {}})
    policy = ScriptedPolicy(tokenizer, '{"city": "Oslo"}}\n</tool_call>')
    client, _ = serve(policy)
    named = {"type": "function", "function": {"name": "get_weather"}}
    out = client.chat.completions.create(
        model=MODEL, messages=HI, tools=[other, WEATHER], tool_choice=named, logprobs=True
    )
    choice = out.choices[0]
    (call,) = choice.message.tool_calls or []
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Oslo"},
    )
    forced = _forced('<tool_call>\n{"name": "get_weather", "arguments": ', tokenizer)
    assert policy.prompts[0][-len(forced) :] == forced
    lps = [e.logprob for e in choice.logprobs.content or []]
    assert lps[: len(forced)] == [0.0] * len(forced)  # ... and count as generated, with p = 1
    assert out.usage.completion_tokens == len(forced) + len(policy.prompts and lps[len(forced) :])
    with pytest.raises(openai.BadRequestError) as e:  # the forced tokens alone overrun it
        client.chat.completions.create(
            model=MODEL, messages=HI, tools=[WEATHER], tool_choice=named, max_tokens=len(forced)
        )
    assert (e.value.body or {})["param"] == "max_tokens"
    for bad in ({"type": "function", "function": {"name": "nope"}}, "required"):
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(
                model=MODEL,
                messages=HI,
                tools=[other] if bad != "required" else None,
                tool_choice=bad,
            )
        assert (e.value.body or {})["param"] == "tool_choice"


def test_completions_count_each_prompt_once_for_n_choices(serve: Any, tokenizer: Any) -> None:
    client, _ = serve(ScriptedPolicy(tokenizer, "x"))
    out = client.completions.create(model=MODEL, prompt=[[5, 6, 7], [8, 9]], n=3, max_tokens=4)
    assert len(out.choices) == 6 and out.usage.prompt_tokens == 5


def test_caps_on_n_and_max_tokens_are_400s(serve: Any, tokenizer: Any) -> None:
    policy = ScriptedPolicy(tokenizer, "ok")
    client, _ = serve(policy, max_n=2, max_tokens_cap=8)
    for ask, param in (
        (dict(n=3), "n"),
        (dict(max_tokens=9), "max_tokens"),
        (dict(max_completion_tokens=9), "max_completion_tokens"),
    ):
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model=MODEL, messages=HI, **ask)
        assert (e.value.body or {})["param"] == param
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL, prompt=[[1], [2]], n=2, max_tokens=2)
    assert (e.value.body or {})["param"] == "n"
    client.chat.completions.create(model=MODEL, messages=HI, n=2)
    assert [s.max_new_tokens for s in policy.samplings] == [8, 8]  # omitted: the cap


def test_bodies_that_are_not_utf8_json_get_openai_errors(serve: Any, tokenizer: Any) -> None:
    _, url = serve(ScriptedPolicy(tokenizer, "ok"))
    for path in ("/v1/chat/completions", "/v1/completions"):
        r = httpx.post(
            f"{url}{path}",
            content=b'{"model": "\xff\xfe"}',
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 400
        assert {"message", "type", "param", "code"} <= set(r.json()["error"])
    missing = httpx.get(f"{url}/v1/nothing-here")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
