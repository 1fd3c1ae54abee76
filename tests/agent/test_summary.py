"""Self-summarisation in the loop: the forced trigger, the `summarize` tool, token-exact
segments, the prefix-cache-friendly request, degenerate summaries, config checks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from shadowrl.agent.config import AgentConfig
from shadowrl.agent.loop import run_episode
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.prompt import Renderer
from shadowrl.agent.summary import (
    SUMMARY_REQUEST,
    asks_for_summary,
    degeneracy,
    next_segment_messages,
)
from shadowrl.agent.tools import ToolSet
from shadowrl.types import Segment, Trajectory

SUMMARY = "stats.py: median() does not sort its input. Next: sort a copy, run the tests."
TOOLS = (*AgentConfig().tools, "summarize")


def summary_config(**summary: Any) -> AgentConfig:
    """Budgets that put the trigger inside the demo task (after the edit)."""
    s = {"enabled": True, "trigger_tokens": 1300, "max_tokens": 64, "carried_result_tokens": 32}
    s["prompt_reserve_tokens"] = 700
    return AgentConfig.model_validate(
        {"max_new_tokens": 128, "max_turns": 12, "tools": TOOLS, "summary": {**s, **summary}}
    )


class Expert:
    """The demo replies in order; the fixed summary whenever the loop asks for one."""

    def __init__(self, replies: list[str], summary: str = SUMMARY):
        self.replies, self.summary, self.prompts = list(replies), summary, []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if prompt.rstrip().endswith(f"{SUMMARY_REQUEST}<|im_end|>\n<|im_start|>assistant"):
            return self.summary
        return self.replies.pop(0)


def play(sandbox: Any, tokenizer: Any, replies: Any, config: AgentConfig) -> Trajectory:
    policy = ScriptedPolicy(tokenizer, replies)
    return asyncio.run(run_episode(policy, sandbox, "Fix it.", tokenizer=tokenizer, config=config))


def generated_runs(tokenizer: Any, seg: Segment) -> list[str]:
    runs, cur = [], []
    for tok, m in zip(seg.token_ids, seg.loss_mask, strict=True):
        if m:
            cur.append(tok)
        elif cur:
            runs, cur = [*runs, tokenizer.decode(cur)], []
    return runs + ([tokenizer.decode(cur)] if cur else [])


def test_forced_trigger_makes_a_chain_of_token_exact_segments(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str], demo_test_cmd: str
) -> None:
    config = summary_config()
    expert = Expert(demo_replies)
    traj = play(demo_sandbox, tokenizer, expert, config)
    assert traj.end == "submitted" and demo_sandbox.exec(demo_test_cmd).exit_code == 0
    first, second = traj.segments
    # Segment 1: the prompt the model saw at each turn is a prefix of it (the request is
    # appended to the same context, so the prefix cache reuses its KV), and it ends with
    # the summary the model generated.
    assert len(expert.prompts) == 5
    ids1 = tokenizer.decode(list(first.token_ids))
    assert all(ids1.startswith(p) for p in expert.prompts[:3])
    assert expert.prompts[2].endswith(f"{SUMMARY_REQUEST}<|im_end|>\n<|im_start|>assistant\n")
    assert generated_runs(tokenizer, first) == [
        *(r + "<|im_end|>" for r in demo_replies[:2]),
        SUMMARY + "<|im_end|>",
    ]
    # Segment 2 starts fresh from system + task + summary + the carried result.
    renderer = Renderer(tokenizer, ToolSet.from_names(TOOLS).schemas())
    carried = tokenizer.decode(list(second.token_ids)).split("# The last tool result\n")[1]
    assert carried.startswith("[edit_file]") and "[... truncated]" in carried
    start = next_segment_messages(
        config.system_prompt, "Fix it.", SUMMARY, carried.split("<|im_end|>")[0]
    )
    prompt2 = renderer.prompt_ids(start)
    assert list(second.token_ids[: len(prompt2)]) == prompt2
    assert tokenizer.decode(prompt2) == expert.prompts[3]
    assert generated_runs(tokenizer, second) == [r + "<|im_end|>" for r in demo_replies[2:]]
    assert traj.num_generated == sum(s.num_generated for s in traj.steps)
    assert traj.info["summaries"] == 1 and traj.info["degenerate_summaries"] == 0
    assert traj.info["summary_tokens"] == traj.steps[2].num_generated
    assert traj.info["summary_texts"] == [SUMMARY]
    assert len(first.token_ids) < config.summary.trigger_tokens + 64 + config.summary.max_tokens


def test_summarize_tool_asks_for_a_summary_early(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str]
) -> None:
    call = '<tool_call>{"name": "summarize", "arguments": {}}</tool_call>'
    expert = Expert([demo_replies[0], call, *demo_replies[1:]])
    traj = play(demo_sandbox, tokenizer, expert, summary_config(trigger_tokens=3000))
    assert traj.end == "submitted" and len(traj.segments) == 2
    assert traj.steps[1].results[0].output == "Write the summary now."
    assert traj.steps[2].text == SUMMARY and traj.info["summaries"] == 1
    # The carried result is the last real one (the reads), not summarize's own reply.
    assert "[read_file]" in expert.prompts[3] and "Write the summary now" not in expert.prompts[3]


@pytest.mark.parametrize("filler", [40, 55, 70])
def test_full_length_replies_never_cut_the_episode_off(
    demo_sandbox: Any, tokenizer: Any, filler: int
) -> None:
    """A model that always writes its whole reply budget (what a random or rambling one
    does) still gets to summarise: the loop asks as soon as one more such reply could
    leave no room for the request and the summary, not only at the trigger."""
    config = summary_config(trigger_tokens=1300).model_copy(
        update={"max_context_tokens": 1300 + 64 + 64, "max_episode_tokens": 10_000}
    )
    text = "I am still looking around. " * filler

    def reply(prompt: str) -> str:
        return SUMMARY if asks_for_summary(prompt) else text

    traj = play(demo_sandbox, tokenizer, reply, config)
    assert traj.end == "max_turns" and traj.info["summaries"] >= 2
    assert all(len(s.token_ids) <= config.max_context_tokens for s in traj.segments)


def test_without_summaries_the_episode_is_one_segment(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str]
) -> None:
    config = summary_config().model_copy(update={"summary": AgentConfig().summary})
    traj = play(
        demo_sandbox,
        tokenizer,
        list(demo_replies),
        config.model_copy(update={"tools": AgentConfig().tools}),
    )
    assert len(traj.segments) == 1 and traj.info["summaries"] == 0


def test_degenerate_summaries_are_counted(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str]
) -> None:
    traj = play(
        demo_sandbox, tokenizer, Expert(demo_replies, summary="I am working."), summary_config()
    )
    assert traj.info["degenerate_summaries"] == 1
    assert traj.info["degenerate_kinds"] == {"no_files": 1}


@pytest.mark.parametrize(
    ("summary", "over", "why"),
    [
        ("  ", False, "empty"),
        ("Fix the median bug in stats.py", False, "copy"),
        ("stats.py sorts", True, "over_budget"),
        ("median is wrong", False, "no_files"),
        ("see src/stats.py", False, None),
    ],
)
def test_degeneracy(summary: str, over: bool, why: str | None) -> None:
    prompt = "Fix the median bug in stats.py, please.\n" + SUMMARY_REQUEST
    assert degeneracy(summary, prompt=prompt, over_budget=over, files={"src/stats.py"}) == why


def test_config_is_checked_at_load() -> None:
    with pytest.raises(ValidationError, match="worst case"):
        summary_config(trigger_tokens=1000)
    with pytest.raises(ValidationError, match="exceeds max_context_tokens"):
        AgentConfig.model_validate(
            {"max_context_tokens": 2048, "summary": {"enabled": True, "trigger_tokens": 2000}}
        )
    with pytest.raises(ValidationError, match="summarize"):
        AgentConfig.model_validate({"tools": TOOLS})
