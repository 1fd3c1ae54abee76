"""The agent loop: token exactness, concurrency, budgets, malformed calls, the demo task."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from required import require
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.loop import NUDGE, EpisodeState, run_episode
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.prompt import Renderer
from shadowrl.agent.tools import TOOLS, ToolContext, ToolSet, tool
from shadowrl.types import Generation, SamplingParams, Trajectory

CFG = AgentConfig()
READ = '<tool_call>{"name": "read_file", "arguments": {"path": "stats.py"}}</tool_call>'
SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def episode(policy: Any, sandbox: Any, tokenizer: Any, **kw: Any) -> Trajectory:
    tools = kw.pop("tools", None)
    config = CFG.model_copy(update=kw)
    return asyncio.run(
        run_episode(policy, sandbox, "Fix it.", tokenizer=tokenizer, config=config, tools=tools)
    )


def test_scripted_expert_solves_the_demo_task(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str], demo_test_cmd: str
) -> None:
    assert demo_sandbox.exec(demo_test_cmd).exit_code != 0
    traj = episode(ScriptedPolicy(tokenizer, demo_replies), demo_sandbox, tokenizer)
    assert traj.end == "submitted" and traj.num_turns == 4 and traj.tool_errors == 0
    assert [c.name for s in traj.steps for c in s.tool_calls] == [
        "read_file",
        "read_file",
        "edit_file",
        "run",
        "submit",
    ]
    assert traj.steps[2].results[0].output.startswith("exit code 0")
    assert demo_sandbox.exec(demo_test_cmd).exit_code == 0


def test_segment_holds_exactly_what_the_model_saw(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str]
) -> None:
    policy = ScriptedPolicy(tokenizer, demo_replies, version=7)
    traj = episode(policy, demo_sandbox, tokenizer)
    (seg,) = traj.segments
    renderer = Renderer(tokenizer, ToolSet.from_names(CFG.tools).schemas())
    # Re-rendering the conversation up to the last reply gives the same ids (plus "\n").
    assert traj.messages[-1].content == "Submitted."  # the result the model never saw
    full = renderer.encode(renderer.text(traj.messages[:-1], add_generation_prompt=False))
    assert list(seg.token_ids) == full[: len(seg.token_ids)]
    assert tokenizer.decode(full[len(seg.token_ids) :]) == "\n"
    # The loss mask covers exactly the generated replies, each ending with <|im_end|>.
    runs, cur = [], []
    for tok, m in zip(seg.token_ids, seg.loss_mask, strict=True):
        if m:
            cur.append(tok)
        elif cur:
            runs, cur = [*runs, cur], []
    runs.append(cur)
    assert [tokenizer.decode(r) for r in runs] == [s.text + "<|im_end|>" for s in traj.steps]
    assert [s.text for s in traj.steps] == demo_replies
    assert all(v == 7 for v, m in zip(seg.versions, seg.loss_mask, strict=True) if m)
    assert all(
        v == -1 and lp == 0.0
        for v, lp, m in zip(seg.versions, seg.logprobs, seg.loss_mask, strict=True)
        if not m
    )
    assert seg.num_generated == traj.num_generated == sum(s.num_generated for s in traj.steps)


def test_malformed_calls_are_answered_and_counted(demo_sandbox: Any, tokenizer: Any) -> None:
    replies = [
        '<tool_call>{"name": "read_file", "arguments": {"path": "stats.py"</tool_call>',
        '<tool_call>{"name": "cat", "arguments": {}}</tool_call>' + READ,
        "I think it is fine.",
        SUBMIT,
    ]
    traj = episode(ScriptedPolicy(tokenizer, replies), demo_sandbox, tokenizer)
    assert traj.end == "submitted" and traj.tool_errors == 2 and traj.info["nudges"] == 1
    feedback = [m.content for m in traj.messages if m.role != "assistant"][2:]
    assert feedback[0].startswith("Error: tool call 1: invalid JSON")
    assert feedback[1].startswith("1\t") and feedback[2].startswith(
        "Error: tool call 1: unknown tool 'cat'"
    )
    assert feedback[3] == NUDGE


def test_read_only_calls_run_concurrently_results_in_call_order(
    demo_sandbox: Any, tokenizer: Any
) -> None:
    both_started = threading.Barrier(2, timeout=10)  # breaks unless the two reads overlap
    second_done = threading.Event()
    log: list[str] = []

    @tool("Slow read.", read_only=True)
    def slow(ctx: ToolContext, name: str) -> str:
        both_started.wait()
        if name == "first":
            second_done.wait(10)  # the first call finishes last
        else:
            second_done.set()
        log.append(name)
        return name

    @tool("Mutate.", read_only=False)
    def mutate(ctx: ToolContext) -> str:
        log.append("mutate")
        return "mutated"

    calls = [
        ("slow", '"name": "first"'),
        ("slow", '"name": "second"'),
        ("mutate", ""),
        ("submit", ""),
    ]
    reply = "".join(
        f'<tool_call>{{"name": "{n}", "arguments": {{{a}}}}}</tool_call>' for n, a in calls
    )
    tools = ToolSet([slow, mutate, TOOLS["submit"]])
    traj = episode(ScriptedPolicy(tokenizer, [reply]), demo_sandbox, tokenizer, tools=tools)
    assert [r.output for r in traj.steps[0].results] == ["first", "second", "mutated", "Submitted."]
    assert log == ["second", "first", "mutate"]


def test_max_turns(demo_sandbox: Any, tokenizer: Any) -> None:
    traj = episode(
        ScriptedPolicy(tokenizer, lambda prompt: READ), demo_sandbox, tokenizer, max_turns=3
    )
    assert traj.end == "max_turns" and traj.num_turns == 3


def test_episode_token_budget_cuts_generation(demo_sandbox: Any, tokenizer: Any) -> None:
    long = "thinking " * 40 + READ
    traj = episode(
        ScriptedPolicy(tokenizer, lambda p: long),
        demo_sandbox,
        tokenizer,
        max_new_tokens=30,
        max_episode_tokens=50,
    )
    assert traj.end == "max_tokens" and traj.num_generated == 50
    assert [s.num_generated for s in traj.steps] == [30, 20]
    assert "cut off" in traj.messages[3].content


def test_context_budget(demo_sandbox: Any, tokenizer: Any) -> None:
    traj = episode(
        ScriptedPolicy(tokenizer, lambda p: READ), demo_sandbox, tokenizer, max_context_tokens=1200
    )
    assert traj.end == "context_full"
    assert len(traj.segments[0].token_ids) <= 1200


class _Stuck:
    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        await asyncio.sleep(60)
        raise AssertionError("unreachable")


def test_episode_timeout(demo_sandbox: Any, tokenizer: Any) -> None:
    traj = episode(_Stuck(), demo_sandbox, tokenizer, episode_timeout_s=0.05)
    assert traj.end == "timeout" and traj.num_turns == 0


def test_scripted_expert_in_the_overlay_sandbox(
    tokenizer: Any, demo_replies: list[str], demo_repo: Any, demo_test_cmd: str
) -> None:
    from shadowrl.sandbox import create_sandbox
    from shadowrl.sandbox.overlay import unavailable_reason

    require(unavailable_reason(), "overlay sandbox")
    sb = create_sandbox(demo_repo, backend="overlay")
    try:
        traj = episode(ScriptedPolicy(tokenizer, demo_replies), sb, tokenizer)
        assert traj.end == "submitted" and "stats.py" in sb.changed_files()
        assert sb.exec(demo_test_cmd).exit_code == 0
    finally:
        sb.close()


@pytest.mark.slow
def test_smollm2_attempts_the_demo_task(demo_sandbox: Any) -> None:
    """The real model runs a (short) episode; it need not succeed, only be well-formed."""
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import ModelConfig, load_model

    model, tok = load_model(ModelConfig(path="smollm2"))
    problem = "median() in stats.py returns wrong results for unsorted input. Fix it."
    config = CFG.model_copy(update={"max_turns": 2, "max_new_tokens": 64, "temperature": 0.0})
    with Engine(model, tok, EngineConfig()) as engine:
        traj = asyncio.run(run_episode(engine, demo_sandbox, problem, tokenizer=tok, config=config))
    assert traj.num_turns >= 1 and traj.num_generated > 0
    (seg,) = traj.segments
    assert sum(seg.loss_mask) == traj.num_generated
    assert all(lp <= 0 for lp, m in zip(seg.logprobs, seg.loss_mask, strict=True) if m)


def test_a_continued_episode_extends_the_same_tokens(demo_sandbox: Any, tokenizer: Any) -> None:
    """EpisodeState (serve's multi-turn sessions): the first call ends at max_turns with a
    tool result and a generation prompt appended; continuing replaces that tail by the
    result plus the user's message, and keeps every earlier id, mask and count."""
    prompts: list[str] = []
    replies = iter([READ, "Done. " + SUBMIT])
    policy = ScriptedPolicy(tokenizer, lambda prompt: prompts.append(prompt) or next(replies))
    config = CFG.model_copy(update={"max_turns": 1, "max_episode_tokens": 200})
    state = EpisodeState()
    run = lambda task: asyncio.run(  # noqa: E731
        run_episode(policy, demo_sandbox, task, tokenizer=tokenizer, config=config, state=state)
    )
    first = run("Fix it.")
    assert first.end == "max_turns" and state.generated_end < len(first.segments[0].token_ids)
    kept = first.segments[0].token_ids[: state.generated_end]
    second = run("Now submit.")
    (seg,) = second.segments
    assert second.end == "submitted" and [m.role for m in second.messages][-4:] == [
        "tool", "user", "assistant", "tool",
    ]  # fmt: skip
    assert seg.token_ids[: len(kept)] == kept and policy.calls == 2
    # one tool response, then the message, then one generation prompt (the stale one is gone)
    assert prompts[1].startswith(tokenizer.decode(list(kept)))
    assert prompts[1].count("</tool_response>") == 1
    assert prompts[1].count("<|im_start|>assistant") == 2
    assert prompts[1].endswith(
        "</tool_response><|im_end|>\n<|im_start|>user\nNow submit.<|im_end|>\n<|im_start|>assistant\n"
    )
    assert sum(seg.loss_mask) == second.num_generated == state.tokens.num_generated
    assert [s.tool_calls[0].id for s in second.steps] == ["call_0_0", "call_1_0"]
