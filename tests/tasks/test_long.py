"""The `long` tier: its records are what the generator makes, the spec and the bug cannot
share the tier's context, and the summarising expert solves a task in >= 2 token-exact
segments under the documented budgets (configs/summarize-cpu.yaml)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from shadowrl.agent.prompt import Renderer
from shadowrl.agent.summary import SUMMARY_REQUEST
from shadowrl.agent.tools import TOOLS, ToolContext, ToolSet
from shadowrl.commands.config import episode_spec, load_config
from shadowrl.episode import episode_in_new_sandbox
from shadowrl.models import load_tokenizer
from shadowrl.tasks.load import load_suite
from shadowrl.tasks.long import DOMAINS, build_long
from shadowrl.tasks.prepare import prepare, task_prompt
from shadowrl.tasks.reference import expert_summary, fix_facts, reference_policy
from shadowrl.types import Message

CONFIG = Path(__file__).parents[2] / "configs" / "summarize-cpu.yaml"


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_tokenizer("smollm2")


def test_committed_suite_is_what_the_generator_makes(tmp_path: Path) -> None:
    tasks = build_long(tmp_path / "long")
    assert [t.model_dump(exclude={"seed"}) for t in tasks] == [
        t.model_dump(exclude={"seed"}) for t in load_suite("long")
    ]
    assert len(tasks) == len(DOMAINS) and {t.split for t in tasks} == {"train", "heldout"}


def test_spec_and_bug_do_not_fit_one_context(tokenizer: Any, cache_dir: Path) -> None:
    """As `read_file` shows them, each fits beside the prompt, never both."""
    agent = load_config([CONFIG]).agent
    renderer = Renderer(tokenizer, ToolSet.from_names(agent.tools).schemas())
    for task in random.Random(0).sample(load_suite("long"), 3):
        prepared = prepare(task, cache_dir)
        prompt = renderer.prompt_ids(
            [Message("system", agent.system_prompt), Message("user", task_prompt(task))]
        )
        (path,) = {p for p, _, _ in fix_facts(task, prepared)}
        sandbox = prepared.sandbox("local")
        try:
            ctx = ToolContext(sandbox, agent)
            shown = [TOOLS["read_file"](ctx, path=p) for p in ("docs/SPEC.md", path)]
        finally:
            sandbox.close()
        sizes = [len(tokenizer.encode(text)) for text in shown]
        assert len(prompt) + max(sizes) < agent.summary.trigger_tokens  # each one can be read
        assert len(prompt) + sum(sizes) > agent.max_context_tokens  # not both


def test_summarising_expert_solves_a_long_task_in_a_chain(tokenizer: Any, cache_dir: Path) -> None:
    spec = episode_spec(load_config([CONFIG]))
    task = next(t for t in load_suite("long", "heldout"))
    prepared = prepare(task, cache_dir)
    policy = reference_policy("scripted", task, prepared, tokenizer)
    traj, verdict = asyncio.run(
        episode_in_new_sandbox(policy, prepared, tokenizer=tokenizer, spec=spec)
    )
    assert verdict.resolved and traj.end == "submitted"
    assert len(traj.segments) >= 2 and traj.info["summaries"] == len(traj.segments) - 1
    assert traj.info["degenerate_summaries"] == 0
    summary = expert_summary(task, prepared)
    for seg in traj.segments[:-1]:  # each ends with the request, then the expert's summary
        text = tokenizer.decode(list(seg.token_ids))
        assert text.endswith(
            f"{SUMMARY_REQUEST}<|im_end|>\n<|im_start|>assistant\n{summary}<|im_end|>"
        )
        assert len(seg.token_ids) <= spec.agent.max_context_tokens
    for seg in traj.segments[1:]:  # a new context: system prompt, task, summary
        assert tokenizer.decode(list(seg.token_ids)).startswith("<|im_start|>system\n")
        assert summary in tokenizer.decode(list(seg.token_ids))
    assert traj.num_generated == sum(s.num_generated for s in traj.steps)
