"""Tree rollouts on the demo task with scripted policies: the entropy rule branches where
the policy's entropy after a tool result passes the threshold (window and cap included),
branches start while their root episode still runs, the concurrent schedule yields the
tree (tokens and credit) that running the root first and its forks afterwards does, and
root episodes come from the warm sandbox pool."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.prompt import format_tool_calls
from shadowrl.agent.state import Checkpoints
from shadowrl.commands.config import episode_spec, load_config
from shadowrl.episode import graded_episode
from shadowrl.rl.credit_tree import Subtree, tree_rows
from shadowrl.rl.roots import SandboxRoots
from shadowrl.rl.tree import BranchingConfig, branch_rule, rollout_tree
from shadowrl.tasks import load_suite, prepare
from shadowrl.types import Generation, SamplingParams, ToolCall

FIX = {"path": "stats.py", "old": "    n = len(values)\n    mid", "new": "    values = sorted(values)\n    n = len(values)\n    mid"}  # fmt: skip
BREAK = {"path": "stats.py", "content": "def mean(v):\n    return 0\n\ndef median(v):\n    return 0\n"}  # fmt: skip
TEST = {"command": "python3 -m unittest -q test_stats"}


def reply(*calls: tuple[str, dict[str, Any]]) -> str:
    return format_tool_calls("", [ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls)])


# read, read, edit, test, submit: a tool result comes back before turns 1 to 4
SCRIPT = [
    reply(("read_file", {"path": "stats.py"})),
    reply(("read_file", {"path": "test_stats.py"})),
    reply(("edit_file", FIX)),
    reply(("run", TEST)),
    reply(("submit", {})),
]


def turns(prompt: str) -> int:
    """Turns before this one: the prompt's assistant headers, less the generation prompt."""
    return prompt.count("<|im_start|>assistant") - 1


def turn_of(tokenizer: Any, prompt_ids: Sequence[int]) -> int:
    return turns(tokenizer.decode(list(prompt_ids)))


class EntropyScript:
    """SCRIPT by turn, each generation carrying `entropies(turn, n_tokens)` (a fake of
    the engine's side of the `Policy` interface)."""

    def __init__(self, tokenizer: Any, entropies: Callable[[int, int], list[float]] | None):
        self.tokenizer, self.entropies = tokenizer, entropies
        self.script = ScriptedPolicy(tokenizer, lambda p: SCRIPT[min(turns(p), 4)])

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        gen = await self.script.generate(prompt_ids, sampling)
        if self.entropies is None:
            return gen
        h = self.entropies(turn_of(self.tokenizer, prompt_ids), len(gen.token_ids))
        return replace(gen, entropies=tuple(h))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Any, Any]:
    from shadowrl.models import load_tokenizer

    task = load_suite("demo")[0]
    prepared = prepare(task, tmp_path_factory.mktemp("demo"))
    spec = episode_spec(load_config(overrides=["--sandbox.backend=local"]))
    return load_tokenizer("smollm2"), task, prepared, spec


def branch_turns(sub: Subtree) -> list[int]:
    """The turns (0-based) each split of the root's line sits right before."""
    mask = sub.leaves[0].segments[0].loss_mask
    starts = [i for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1])]
    turns: list[int] = []
    node: Any = sub
    while isinstance(node, Subtree) and node.split is not None:
        turns.append(starts.index(node.split[1]))
        node = node.branches[0]
    return turns


def high_at(*turns: int, head: int = 0) -> Callable[[int, int], list[float]]:
    """2.0 nats at `turns` (only over the first `head` tokens if given), 0.1 elsewhere."""

    def h(turn: int, n: int) -> list[float]:
        if turn not in turns:
            return [0.1] * n
        return [2.0] * n if not head else [2.0] * head + [0.1] * (n - head)

    return h


@pytest.mark.parametrize(
    ("entropies", "overrides", "expected"),
    [
        (high_at(1, 3), {}, [1, 3]),  # the cap allows two branch points
        (high_at(1, 3), {"max_branch_points": 1}, [1]),
        (high_at(1, 3), {"entropy_threshold": 2.5}, []),  # never that uncertain
        (high_at(0, 2), {}, [2]),  # turn 0 follows no tool result: no branch before it
        (high_at(2, head=4), {"entropy_window": 4}, [2]),  # uncertain at the start only
        (high_at(2, head=4), {"entropy_window": 64}, []),  # ... diluted over 64 tokens
        (None, {}, []),  # a policy that reports no entropies never branches
    ],
)
def test_entropy_rule_branches_where_the_threshold_is_passed(
    demo: Any, entropies: Any, overrides: dict[str, Any], expected: list[int]
) -> None:
    tokenizer, task, prepared, spec = demo
    defaults = {"entropy_threshold": 1.0, "entropy_window": 8, "max_branch_points": 2}
    cfg = BranchingConfig(
        enabled=True, roots=1, branches=2, rule="entropy", **{**defaults, **overrides}
    )
    group = asyncio.run(
        rollout_tree(
            EntropyScript(tokenizer, entropies),
            task,
            prepared,
            branching=cfg,
            tokenizer=tokenizer,
            spec=spec,
        )
    )
    assert group.ok, group.errors
    (sub,) = group.subtrees
    assert branch_turns(sub) == expected
    assert len(group.trajectories) == 1 + len(expected)  # one fork per branch point
    for leaf in group.trajectories:  # every fork re-ran the script from its branch point
        assert [s.text for s in leaf.steps] == [s.text for s in group.trajectories[0].steps]
        assert leaf.reward == 1.0


def test_branches_start_while_the_root_episode_runs(demo: Any) -> None:
    """The root's last turn waits until a branch has generated its first turn: with forks
    started only after the root finished, this would never happen."""
    tokenizer, task, prepared, spec = demo
    asked: Counter[int] = Counter()
    done: list[tuple[int, int]] = []  # (turn, its n-th call), as generations return
    branched = asyncio.Event()
    script = ScriptedPolicy(tokenizer, lambda p: SCRIPT[[0, 2, 4][turns(p)]])

    class Policy:
        async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
            turn = turn_of(tokenizer, prompt_ids)
            asked[turn] += 1
            call = (turn, asked[turn])
            if call == (1, 2):  # a branch generates the turn after the branch point
                branched.set()
            if turn == 2 and not branched.is_set():
                await asyncio.wait_for(branched.wait(), timeout=120)  # a deadlock guard only
            gen = await script.generate(prompt_ids, sampling)
            done.append(call)
            return gen

    cfg = BranchingConfig(enabled=True, roots=1, branches=2, rule="turn", turn=1)
    group = asyncio.run(
        rollout_tree(Policy(), task, prepared, branching=cfg, tokenizer=tokenizer, spec=spec)
    )
    assert group.ok, group.errors
    assert len(group.trajectories) == 2 and all(t.end == "submitted" for t in group.trajectories)
    assert done.index((1, 2)) < done.index((2, 1))  # a branch generated before the root ended


def test_the_concurrent_tree_equals_root_first_then_forks(demo: Any) -> None:
    """Deterministic fixture: replies depend on the prompt and, at the branch turn, on how
    often that prompt was asked. The tree built with forks started at their checkpoint
    has the tokens and credit of the schedule that ran the root to its end first."""
    tokenizer, task, prepared, spec = demo
    variants = [reply(("submit", {})), reply(("write_file", BREAK), ("submit", {})),
                reply(("run", TEST), ("submit", {}))]  # fmt: skip

    def policy() -> ScriptedPolicy:
        asked: Counter[str] = Counter()

        def script(prompt: str) -> str:
            turn = turns(prompt)
            if turn < 2:
                return SCRIPT[0] if turn == 0 else reply(("edit_file", FIX))
            asked[prompt] += 1
            return variants[(asked[prompt] - 1) % 3] if turn == 2 else reply(("submit", {}))

        return ScriptedPolicy(tokenizer, script)

    cfg = BranchingConfig(enabled=True, roots=1, branches=3, rule="first_edit")
    group = asyncio.run(
        rollout_tree(policy(), task, prepared, branching=cfg, tokenizer=tokenizer, spec=spec)
    )

    async def sequential() -> Subtree:
        pol, root = policy(), spec.open_sandbox(prepared)

        async def graded(sandbox: Any, **kw: Any) -> Any:
            try:
                return (
                    await graded_episode(
                        pol, sandbox, prepared, tokenizer=tokenizer, spec=spec, **kw
                    )
                )[0]
            finally:
                sandbox.close()

        try:
            rule = branch_rule(cfg)
            cps = Checkpoints(when=lambda steps: not cps.taken and rule(steps))
            first = await graded(root.snapshot().fork(), checkpoints=cps)  # runs to its end
            (cp,) = cps.taken
            rest = [await graded(cp.fork(), start=cp) for _ in range(2)]  # then the forks
            cp.release()
            return Subtree((first, *rest), (len(cp.state.chain.done), len(cp.state.tokens.ids)))
        finally:
            root.close()

    def rows(subtrees: list[Subtree]) -> list[tuple[Any, ...]]:
        rows = tree_rows(subtrees)
        return sorted((r.segment.token_ids, r.segment.loss_mask, r.advantage) for r in rows)

    expected = asyncio.run(sequential())
    assert group.ok and sorted(t.reward for t in group.trajectories) == [0.0, 1.0, 1.0]
    assert group.subtrees[0].split == expected.split
    assert rows(group.subtrees) == rows([expected])


def test_root_episodes_come_from_the_warm_pool(demo: Any) -> None:
    tokenizer, task, prepared, _ = demo
    spec = episode_spec(
        load_config(overrides=["--sandbox.backend=local", "--sandbox.pool.enabled=true"])
    )
    roots = SandboxRoots(spec)
    cfg = BranchingConfig(enabled=True, roots=2, branches=2, rule="turn", turn=2)

    async def two_groups() -> list[Any]:  # the pool outlives each group
        policy, kw = EntropyScript(tokenizer, None), {"tokenizer": tokenizer, "spec": spec}
        return [
            await rollout_tree(policy, task, prepared, branching=cfg, roots=roots, **kw)
            for _ in range(2)
        ]

    try:
        for group in asyncio.run(two_groups()):
            assert group.ok and len(group.trajectories) == 4
            assert all(sub.split is not None for sub in group.subtrees)
        (pool,) = roots.pools
        assert pool.stats.hits + pool.stats.misses == 4  # every root episode claimed a fork
    finally:
        roots.close()
