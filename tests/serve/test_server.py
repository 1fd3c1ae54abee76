"""The OpenAI-compatible server, driven over real HTTP by the official `openai` client.

The server under test is real (uvicorn on a free localhost port, in a thread). The
model side is either a scripted policy (deterministic replies such as a Hermes tool
call) or the tiny random Llama behind the real batching engine.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from serve_fakes import MODEL, WEATHER, ScriptedPolicy

from shadowrl.agent.prompt import render_prompt
from shadowrl.types import Message, SamplingParams


def test_chat_renders_with_the_harness_template_and_counts_usage(
    serve: Any, tokenizer: Any
) -> None:
    policy = ScriptedPolicy(tokenizer, "Hello there, friend.")
    client, _ = serve(policy)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
    out = client.chat.completions.create(
        model=MODEL, messages=messages, temperature=0, max_tokens=50
    )
    choice = out.choices[0]
    assert choice.message.content == "Hello there, friend."
    assert choice.finish_reason == "stop"
    expected_prompt = render_prompt(
        tokenizer, [Message("system", "Be brief."), Message("user", "Hi!")], None
    )
    assert policy.prompts == [expected_prompt]
    reply_ids = [
        *tokenizer.encode("Hello there, friend.", add_special_tokens=False),
        tokenizer.eos_token_id,
    ]
    assert out.usage.prompt_tokens == len(expected_prompt)
    assert out.usage.completion_tokens == len(reply_ids)
    assert out.usage.total_tokens == len(expected_prompt) + len(reply_ids)
    extra = choice.model_extra or {}
    assert extra["token_ids"] == reply_ids
    assert extra["policy_versions"] == [0] * len(reply_ids)
    assert policy.samplings[0].temperature == 0 and policy.samplings[0].max_new_tokens == 50


def test_chat_tool_call_is_parsed_from_hermes_tags(serve: Any, tokenizer: Any) -> None:
    reply = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    client, _ = serve(ScriptedPolicy(tokenizer, reply))
    out = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER]
    )
    choice = out.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me check.\n"  # the text before the call, as is
    (call,) = choice.message.tool_calls or []
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}


def test_tool_results_round_trip_through_the_template(serve: Any, tokenizer: Any) -> None:
    policy = ScriptedPolicy(tokenizer, "It is sunny.")
    client, _ = serve(policy)
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    messages = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    out = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER])
    assert (
        out.choices[0].message.content == "It is sunny." and not out.choices[0].message.tool_calls
    )
    prompt_text = tokenizer.decode(policy.prompts[0])
    assert "<tool_response>\nsunny\n</tool_response>" in prompt_text
    assert '"city": "Paris"' in prompt_text


def test_streaming_matches_the_non_streaming_reply(serve: Any, tokenizer: Any) -> None:
    reply = "Streaming works, ünïcode too. 🚀"
    client, _ = serve(ScriptedPolicy(tokenizer, reply))
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "go"}],
        stream=True,
        stream_options={"include_usage": True},
        logprobs=True,
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reply
    finals = [c.choices[0] for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [f.finish_reason for f in finals] == ["stop"]
    n_tokens = len(tokenizer.encode(reply, add_special_tokens=False)) + 1
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == n_tokens
    logprobs = [
        lp.logprob
        for c in chunks
        if c.choices and c.choices[0].logprobs
        for lp in c.choices[0].logprobs.content or []
    ]
    assert logprobs == pytest.approx([-0.5 - k / 100 for k in range(n_tokens)])


def test_a_reply_cut_inside_a_character_reads_the_same_streamed_or_not(
    serve: Any, tokenizer: Any
) -> None:
    """`max_tokens` can end a reply between the bytes of one character: both paths then
    return the text the tokenizer decodes (ending in U+FFFD), the stream without losing
    what it held back."""
    reply = "héllo 日本語 ok"
    ids = tokenizer.encode(reply, add_special_tokens=False)
    # ScriptedPolicy sends max_tokens - 1 reply tokens, then its stop token
    cut = next(k for k in range(1, len(ids)) if tokenizer.decode(ids[:k]).endswith("\ufffd"))
    expected = tokenizer.decode(ids[:cut])
    client, _ = serve(ScriptedPolicy(tokenizer, reply))
    ask = {"model": MODEL, "messages": [{"role": "user", "content": "go"}], "max_tokens": cut + 1}
    whole = client.chat.completions.create(**ask).choices[0].message.content
    chunks = list(client.chat.completions.create(**ask, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert whole == streamed == expected


def test_streamed_tool_call_is_held_back_and_sent_whole(serve: Any, tokenizer: Any) -> None:
    reply = 'Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    client, _ = serve(ScriptedPolicy(tokenizer, reply))
    chunks = list(
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Oslo?"}],
            tools=[WEATHER],
            stream=True,
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.content or "" for d in deltas) == "Checking."
    calls = [tc for d in deltas for tc in d.tool_calls or []]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize(
    "reply",
    [
        "\n  Plain text, with tools offered.\n",
        '\nLet me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
        "\nHi <tool_call>\n{not json}\n</tool_call>",
    ],
    ids=["no-call", "call", "malformed-call"],
)
def test_with_tools_the_stream_spells_the_non_streamed_reply(
    serve: Any, tokenizer: Any, reply: str
) -> None:
    """What a stream sends is never retracted, so the reply it adds up to must be the
    non-streamed one exactly: same content (whitespace included), same calls."""
    client, _ = serve(ScriptedPolicy(tokenizer, reply))
    ask = {"model": MODEL, "messages": [{"role": "user", "content": "Oslo?"}], "tools": [WEATHER]}
    whole = client.chat.completions.create(**ask).choices[0]
    deltas = [c.choices[0].delta for c in client.chat.completions.create(**ask, stream=True)]
    streamed = "".join(d.content or "" for d in deltas)
    calls = [(c.function.name, c.function.arguments) for d in deltas for c in d.tool_calls or []]
    assert streamed == (whole.message.content or "")
    assert calls == [
        (c.function.name, c.function.arguments) for c in whole.message.tool_calls or []
    ]
    assert bool(calls) == (reply.count("{") == 2)  # only the well-formed call is a call


def test_stop_strings_are_cut_and_n_choices_get_distinct_seeds(serve: Any, tokenizer: Any) -> None:
    policy = ScriptedPolicy(tokenizer, "one two STOP three")
    client, _ = serve(policy)
    out = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "count"}], stop=["STOP"], n=3, seed=7
    )
    assert [c.message.content for c in out.choices] == ["one two "] * 3
    assert {c.finish_reason for c in out.choices} == {"stop"}
    assert sorted(s.seed for s in policy.samplings) == [7, 8, 9]
    assert all(s.stop == ("STOP",) for s in policy.samplings)


def test_completions_accept_token_ids_and_return_logprobs(serve: Any, tokenizer: Any) -> None:
    policy = ScriptedPolicy(tokenizer, " world")
    client, _ = serve(policy)
    prompt = tokenizer.encode("hello", add_special_tokens=False)
    out = client.completions.create(
        model=MODEL,
        prompt=prompt,
        max_tokens=8,
        logprobs=0,
        extra_body={"return_tokens_as_token_ids": True},
    )
    choice = out.choices[0]
    assert policy.prompts == [prompt]
    assert choice.text == " world"
    ids = (choice.model_extra or {})["token_ids"]
    assert choice.logprobs is not None and choice.logprobs.tokens == [f"token_id:{t}" for t in ids]
    assert choice.logprobs.token_logprobs == pytest.approx(
        [-0.5 - k / 100 for k in range(len(ids))]
    )
    text_out = client.completions.create(model=MODEL, prompt=["a", "b"], max_tokens=4)
    assert len(text_out.choices) == 2 and text_out.usage.prompt_tokens == 2


def _error(exc: pytest.ExceptionInfo[openai.APIStatusError]) -> dict[str, Any]:
    body = exc.value.body
    assert isinstance(body, dict) and {"message", "type", "param", "code"} <= set(body)
    return body


def test_bad_requests_get_openai_errors_and_the_server_keeps_serving(
    serve: Any, tokenizer: Any
) -> None:
    client, url = serve(ScriptedPolicy(tokenizer, "ok"), max_context_tokens=64)
    hi = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="nope", messages=hi)
    assert _error(e)["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "x " * 200}]
        )
    assert _error(e)["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=hi, temperature=5)
    assert _error(e)["param"] == "temperature"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=[])
    assert _error(e)["param"] == "messages"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=hi, top_logprobs=3)
    assert _error(e)["param"] == "top_logprobs"  # OpenAI too: top_logprobs needs logprobs
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL, prompt=[10**9], max_tokens=2)
    assert _error(e)["param"] == "prompt"
    raw = httpx.post(
        f"{url}/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert raw.status_code == 400 and raw.json()["error"]["code"] == "invalid_json"
    assert (
        client.chat.completions.create(model=MODEL, messages=hi).choices[0].message.content == "ok"
    )
    assert [m.id for m in client.models.list()] == [MODEL]


def test_concurrent_requests_are_in_flight_together(serve: Any, tokenizer: Any) -> None:
    policy = ScriptedPolicy(tokenizer, "a b c d e f", delay_s=0.02)
    _, url = serve(policy)

    async def main() -> list[str]:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        calls = [
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": f"q{i}"}]
            )
            for i in range(6)
        ]
        return [r.choices[0].message.content or "" for r in await asyncio.gather(*calls)]

    assert asyncio.run(main()) == ["a b c d e f"] * 6
    assert policy.peak > 1  # a serialising server would never overlap two generations


def test_admin_load_weights_bumps_the_policy_version(
    serve: Any, tokenizer: Any, tmp_path: Path
) -> None:
    import torch
    from safetensors.torch import save_file

    policy = ScriptedPolicy(tokenizer, "v")
    client, url = serve(policy, admin_token="s3cret")
    save_file({"w": torch.ones(2)}, str(tmp_path / "delta.safetensors"))
    body = {"path": str(tmp_path / "delta.safetensors"), "delta": True}
    assert httpx.post(f"{url}/admin/load_weights", json=body).status_code == 401
    auth = {"Authorization": "Bearer s3cret"}
    missing = httpx.post(
        f"{url}/admin/load_weights", json={"path": str(tmp_path / "nope")}, headers=auth
    )
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "path"
    ok = httpx.post(f"{url}/admin/load_weights", json=body, headers=auth)
    assert ok.status_code == 200 and ok.json()["version"] == 1
    assert policy.swaps == [(1, True, {"w"})]
    assert httpx.get(f"{url}/health").json()["version"] == 1
    out = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert set((out.choices[0].model_extra or {})["policy_versions"]) == {1}


# ---------------------------------------------------------------- the real engine


def _record_batch_sizes(engine: Any) -> list[int]:
    """Spy on the engine's decode step (calls through) to see how many sequences each step ran."""
    sizes: list[int] = []
    decode = engine.decoder.decode

    def spy(tokens: Any, *args: Any) -> Any:
        sizes.append(len(tokens))
        return decode(tokens, *args)

    engine.decoder.decode = spy
    return sizes


def test_engine_greedy_chat_streamed_or_not_matches_the_engine(
    serve: Any, tokenizer: Any, engine: Any
) -> None:
    client, _ = serve(engine)
    messages = [{"role": "user", "content": "Write a haiku about tests."}]
    out = client.chat.completions.create(
        model=MODEL, messages=messages, temperature=0, max_tokens=16, logprobs=True
    )
    prompt = render_prompt(tokenizer, [Message("user", "Write a haiku about tests.")], None)
    sp = SamplingParams(16, 0.0, stop_token_ids=(tokenizer.eos_token_id,))
    direct = asyncio.run(engine.generate(prompt, sp))
    choice = out.choices[0]
    assert (choice.model_extra or {})["token_ids"] == list(direct.token_ids)
    assert choice.message.content == tokenizer.decode(
        list(direct.token_ids), skip_special_tokens=True
    )
    assert [t.logprob for t in choice.logprobs.content or []] == pytest.approx(
        direct.logprobs, abs=1e-4
    )
    assert out.usage.completion_tokens == len(direct.token_ids)
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, temperature=0, max_tokens=16, stream=True
    )
    assert (
        "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        == choice.message.content
    )


def test_engine_batches_concurrent_requests(serve: Any, engine: Any) -> None:
    _, url = serve(engine)
    sizes = _record_batch_sizes(engine)

    async def main() -> list[int]:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        calls = [
            client.completions.create(
                model=MODEL, prompt=[10 + i, 20, 30], max_tokens=24, temperature=0
            )
            for i in range(6)
        ]
        return [r.usage.completion_tokens for r in await asyncio.gather(*calls)]

    try:
        assert all(n >= 1 for n in asyncio.run(main()))
    finally:
        del engine.decoder.decode  # drop the spy, back to the bound method
    assert max(sizes) > 1


def test_engine_admin_checkpoint_load_changes_version_and_output(
    serve: Any, engine: Any, tmp_path: Path
) -> None:
    from shadowrl.models import tiny_model

    client, url = serve(engine, version=engine.version, admin_token="t")
    admin = {"Authorization": "Bearer t"}
    ask = dict(model=MODEL, prompt=[5, 6, 7], max_tokens=8, temperature=0)
    before = client.completions.create(**ask).choices[0].model_extra or {}
    other, _ = tiny_model(seed=1)
    other.save_pretrained(tmp_path / "ckpt")
    reply = httpx.post(
        f"{url}/admin/load_weights",
        json={"path": str(tmp_path / "ckpt"), "version": 7},
        headers=admin,
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    after = client.completions.create(**ask).choices[0].model_extra or {}
    assert set(after["policy_versions"]) == {7} and set(before["policy_versions"]) != {7}
    assert after["token_ids"] != before["token_ids"]
    bad = httpx.post(
        f"{url}/admin/load_weights",
        json={"path": str(tmp_path / "ckpt"), "delta": "x"},
        headers=admin,
    )
    assert bad.status_code == 400


def test_cli_flags_override_the_serve_section() -> None:
    import argparse

    from shadowrl.commands.config import Config
    from shadowrl.commands.serve import add_args, serve_config

    parser = argparse.ArgumentParser()
    add_args(parser)
    cfg = serve_config(parser.parse_args(["--port", "0", "--model-name", "m"]), Config())
    assert (cfg.host, cfg.port, cfg.model_name) == ("127.0.0.1", 0, "m")
