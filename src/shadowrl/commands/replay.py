"""`shadowrl replay`: continue a saved episode from one of its turns, for debugging.

`shadowrl run --save t.json` records an episode; `shadowrl replay t.json --from-turn K`
rebuilds the state right before turn K (the workspace from the recorded files, the
tokens cut from the recorded segments: nothing re-rendered), continues it with
`--model` (default: the recorded one) answering tool calls with the recorded outputs
(`--live-tools` runs them for real) under the recorded agent config, and prints the
transcript from there and whether it regenerated the recorded tail. With local weights
it also teacher-forces the recorded tail through the model and prints the largest gap
to the recorded logprobs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.commands.config import Config, episode_spec
from shadowrl.commands.errors import UsageError

if TYPE_CHECKING:
    from shadowrl.agent.record import Record
    from shadowrl.types import Trajectory


def add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trajectory", type=Path, help="a file written by `shadowrl run --save`")
    parser.add_argument(
        "--from-turn", type=int, required=True, metavar="K",
        help="continue from right before turn K (1-based, as `shadowrl run` numbers them; "
        "K=2 keeps turn 1 as recorded)",
    )  # fmt: skip
    parser.add_argument("--model", help="the policy to continue with (default: the recorded one)")
    parser.add_argument(
        "--live-tools", action="store_true",
        help="run tool calls for real instead of answering with the recorded outputs",
    )  # fmt: skip


def teacher_forced_gap(model: Any, rec: Record, turn: int) -> tuple[float, int]:
    """max |log π(recorded token) − recorded logprob| over the generations from step
    `turn` (0-based) on, and how many tokens that covers."""
    import torch

    from shadowrl.agent.record import generated_runs
    from shadowrl.rl.trainer import token_logprobs

    segments, runs = rec.trajectory.segments, generated_runs(rec.trajectory.segments)
    gap, count = 0.0, 0
    for s, start, end in runs[turn:]:
        seg = segments[s]
        mask = torch.zeros(1, len(seg.token_ids), dtype=torch.bool)
        mask[0, start:end] = True
        with torch.no_grad():
            lp = token_logprobs(model, torch.tensor([seg.token_ids]), mask)[0, start:end]
        recorded = torch.tensor(seg.logprobs[start:end])
        gap, count = max(gap, float((lp - recorded).abs().max())), count + end - start
    return gap, count


def first_divergence(a: Trajectory, b: Trajectory) -> int | None:
    """The first (1-based) turn where two episodes differ, None if they are identical."""
    for k, (x, y) in enumerate(zip(a.steps, b.steps, strict=False), 1):
        if x != y:
            return k
    same = len(a.steps) == len(b.steps) and a.end == b.end
    same = same and [s.token_ids for s in a.segments] == [s.token_ids for s in b.segments]
    return None if same else min(len(a.steps), len(b.steps)) + 1


def run(args: argparse.Namespace, config: Config) -> int:
    import asyncio
    import contextlib

    from rich.console import Console

    from shadowrl.agent import record
    from shadowrl.agent.config import AgentConfig
    from shadowrl.agent.loop import run_episode
    from shadowrl.agent.recorded import RecordedOutputs
    from shadowrl.agent.tools import ToolSet
    from shadowrl.commands.policies import open_policy, policy_kind
    from shadowrl.commands.run import _print_step, _WithSpinner, resolve_task
    from shadowrl.tasks import prepare

    try:
        rec = record.load(args.trajectory)
    except ValueError as e:
        raise UsageError(str(e)) from e
    console, spec = Console(), episode_spec(config)
    task = resolve_task(rec.meta["task"], rec.meta["id"], config.tasks.suite)
    model = args.model or rec.meta["model"]
    agent = AgentConfig.model_validate(rec.meta["agent"])  # the recorded budgets, sampling
    tools = ToolSet.from_names(agent.tools)
    if not args.live_tools:
        tools = RecordedOutputs(tools, rec.trajectory.steps)
    turn = args.from_turn - 1

    async def replay() -> Trajectory:
        async with contextlib.AsyncExitStack() as stack:
            prepared = await asyncio.to_thread(prepare, task, config.tasks.cache_dir)
            factory = await stack.enter_async_context(open_policy(model, config))
            fresh = await asyncio.to_thread(spec.open_sandbox, prepared)
            stack.push_async_callback(asyncio.to_thread, fresh.close)
            try:
                cp = record.checkpoint_at(rec, turn, fresh)
            except ValueError as e:
                raise UsageError(str(e)) from e
            stack.callback(cp.release)
            sandbox = cp.fork()
            stack.callback(sandbox.close)
            console.rule(f"[bold]{task.instance_id} · replay from turn {args.from_turn} · {model}")
            steps = iter(range(args.from_turn, agent.max_turns + 1))
            return await run_episode(
                _WithSpinner(factory(task, prepared), console), sandbox, "",
                tokenizer=factory.tokenizer, config=agent, tools=tools, start=cp,
                on_step=lambda step: _print_step(console, step, next(steps)),
            )  # fmt: skip

    traj = asyncio.run(replay())
    diverged = first_divergence(traj, rec.trajectory)
    console.print(f"end: {traj.end} (recorded: {rec.trajectory.end})")
    console.print(
        "regenerated the recorded tail token for token"
        if diverged is None
        else f"diverged from the record at turn {diverged}"
    )
    if policy_kind(model) == "local":
        from shadowrl.models import load_model

        weights, _ = load_model(config.model.model_copy(update={"path": model}))
        gap, n = teacher_forced_gap(weights, rec, turn)
        console.print(f"teacher-forced recorded tail: max |Δ logprob| = {gap:.2e} over {n} tokens")
    return 0
