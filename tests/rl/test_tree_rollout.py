"""Tree rollouts on the demo task with a scripted policy: every root branches right after
its first edit, the forks share the root's prefix token for token and start from the
workspace as it was there, each leaf is graded on its own, and the tree's rows train."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.prompt import format_tool_calls
from shadowrl.commands.config import episode_spec, load_config
from shadowrl.rl.credit_tree import tree_rows
from shadowrl.rl.tree import BranchingConfig, rollout_tree
from shadowrl.tasks import load_suite, prepare
from shadowrl.types import ToolCall

FIX = {"path": "stats.py", "old": "    n = len(values)\n    mid", "new": "    values = sorted(values)\n    n = len(values)\n    mid"}  # fmt: skip
BREAK = {
    "path": "stats.py",
    "content": "def mean(v):\n    return 0\n\ndef median(v):\n    return 0\n",
}


def reply(*calls: tuple[str, dict[str, Any]]) -> str:
    return format_tool_calls("", [ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls)])


def test_first_edit_branches_share_the_prefix_and_are_graded_apart(tmp_path: Path) -> None:
    from shadowrl.models import load_tokenizer

    tokenizer = load_tokenizer("smollm2")
    variants = itertools.cycle(
        [reply(("submit", {})), reply(("write_file", BREAK), ("submit", {}))]
    )

    def policy(prompt: str) -> str:
        turn = prompt.count("<|im_start|>assistant") - 1
        if turn == 0:
            return reply(("read_file", {"path": "stats.py"}))
        return reply(("edit_file", FIX)) if turn == 1 else next(variants)

    task = load_suite("demo")[0]
    prepared = prepare(task, tmp_path)
    spec = episode_spec(load_config(overrides=["--sandbox.backend=local"]))
    cfg = BranchingConfig(enabled=True, roots=2, branches=3, rule="first_edit")
    group = asyncio.run(
        rollout_tree(
            ScriptedPolicy(tokenizer, policy),
            task,
            prepared,
            branching=cfg,
            tokenizer=tokenizer,
            spec=spec,
        )
    )
    assert group.ok and len(group.subtrees) == 2 and len(group.trajectories) == 6
    for sub in group.subtrees:
        assert sub.split is not None and len(sub.branches) == 3
        root = sub.branches[0]
        for leaf in sub.branches:
            assert leaf.steps[:2] == root.steps[:2] and len(leaf.steps) == 3
            broke = leaf.steps[2].tool_calls[0].name == "write_file"
            assert leaf.reward == (0.0 if broke else 1.0), leaf.info
    rows = tree_rows(group.subtrees)  # raises unless the prefixes are shared token for token
    leaves = sum(t.num_generated for t in group.trajectories)
    shared = sum(sum(t.steps[i].num_generated for i in range(2)) for t in group.trajectories)
    # each subtree's prefix is trained once, not once per leaf
    assert sum(r.segment.num_generated for r in rows) == leaves - shared * 2 // 3
