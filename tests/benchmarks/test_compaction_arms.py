"""The episode arms of benchmarks/compaction.py: what each arm's model is shown and who
writes the summary (scripted policies stand in for the engines)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.prompt import Renderer
from shadowrl.agent.summary import SUMMARY_REQUEST
from shadowrl.commands.config import episode_spec, load_config
from shadowrl.models import load_tokenizer
from shadowrl.types import Message, SamplingParams

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def arms(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import compaction_episodes

    return compaction_episodes


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_tokenizer("tiny")


def conversation(turns: int) -> list[Message]:
    msgs = [Message("system", "You fix bugs."), Message("user", "Fix app/pricing.py.")]
    for i in range(turns):
        msgs += [Message("assistant", f"reading part {i} " * 20), Message("user", f"out {i} " * 30)]
    return msgs


def test_truncated_view_keeps_head_and_recent_whole_messages(arms: Any, tokenizer: Any) -> None:
    renderer = Renderer(tokenizer)
    msgs = conversation(6)
    ids = renderer.prompt_ids(msgs)
    start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    head = renderer.prompt_ids(msgs[:2])[: ids.index(start, 1 + ids.index(start, 1))]
    assert arms.truncated_view(ids, start, len(ids)) == ids  # fits: unchanged
    room = len(ids) // 2
    view = arms.truncated_view(ids, start, room)
    assert len(view) <= room < len(ids)
    assert view[: len(head)] == head  # system + task kept
    rest = view[len(head) :]
    assert rest[0] == start and ids[-len(rest) :] == rest  # a suffix cut at a message start
    # One message more would not fit: the view keeps as many recent messages as it can.
    cut = len(ids) - len(rest)
    earlier = max(i for i, t in enumerate(ids[:cut]) if t == start)
    assert len(head) + len(ids) - earlier > room


def test_compacting_routes_summary_requests_and_counts(arms: Any, tokenizer: Any) -> None:
    seen: list[str] = []
    actor = ScriptedPolicy(tokenizer, lambda p: seen.append(p) or "work")
    writer = ScriptedPolicy(tokenizer, lambda p: "summary: app/pricing.py")
    renderer = Renderer(tokenizer)
    msgs = conversation(6)
    policy = arms.Compacting(actor, tokenizer, summariser=writer, budget=400)
    sampling = SamplingParams(max_new_tokens=50, stop_token_ids=renderer.stop_token_ids)
    work = renderer.prompt_ids(msgs)
    asyncio.run(policy.generate(work, sampling))
    shown = policy.read
    asked = renderer.prompt_ids([*msgs, Message("user", SUMMARY_REQUEST)])
    gen = asyncio.run(policy.generate(asked, sampling))
    assert tokenizer.decode(gen.token_ids, skip_special_tokens=True) == "summary: app/pricing.py"
    assert len(seen) == 1 and writer.calls == 1  # the request went to the summariser only
    assert policy.summaries == 1 and policy.summary_tokens == len(gen.token_ids)
    # The actor read a truncated view (<= budget - reply): the task and the latest turn,
    # not the oldest; the summariser read the whole context.
    assert shown <= 400 - 50 < len(work) and policy.read == shown + len(asked)
    assert "Fix app/pricing.py." in seen[0] and "out 5" in seen[0] and "out 0" not in seen[0]


def test_arm_specs_differ_only_in_compaction(arms: Any) -> None:
    spec = episode_spec(load_config([ROOT / "configs" / "summarize-cpu.yaml"]))
    same = {"max_turns", "max_new_tokens", "max_episode_tokens", "temperature", "system_prompt"}
    for arm in ("prompted", "learned"):
        agent = arms.arm_spec(spec, arm).agent
        assert agent.model_dump(exclude={"episode_timeout_s"}) == spec.agent.model_dump(
            exclude={"episode_timeout_s"}
        )
    for arm in ("full", "truncation"):
        agent = arms.arm_spec(spec, arm).agent
        assert not agent.summary.enabled and "summarize" not in agent.tools
        assert agent.max_context_tokens == arms.FULL_CONTEXT > spec.agent.max_context_tokens
        assert agent.model_dump(include=same) == spec.agent.model_dump(include=same)
        assert agent.episode_timeout_s == arms.EPISODE_TIMEOUT_S
