"""`shadowrl replay`: continue a recorded episode from one of its turns, for debugging.

    shadowrl replay t.json --from-turn K        # `run --save`, `eval --save-dir`, or
                                                # a training rollout (train.save_rollouts)
    shadowrl replay <trace id> --from-turn K    # a served session of serve.traces
    shadowrl replay <trace id> --branch N --from-turn K   # N fresh continuations from
                                                # turn K, diffs side by side (replay_branch.py)

It rebuilds the state right before turn K (the tokens cut from the recorded segments,
nothing re-rendered; the workspace from the recorded files, or the task's fresh one
with the recorded edits re-run), continues it with the recorded policy (`--model`
replaces it; see `replay_policy.py` for where each kind of record finds its weights)
answering tool calls with the recorded outputs (`--live-tools` runs them for real)
under the recorded agent config, prints the transcript from there and whether it
regenerated the recorded tail. With local weights it then teacher-forces the recorded
tail (every generation from turn K on) through the policy of each token's version and
prints the largest gap to the recorded logprobs; over `--tolerance` the exit code is 1.

A chat or completions session has no agent loop: turn K is its K-th request, and
replay teacher-forces the requests from there and regenerates each from its recorded
prompt with its recorded sampling settings. An agent session whose messages cannot
be rebuilt token for token (a follow-up message, a summary) is checked the same way.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.commands.config import Config, episode_spec
from shadowrl.commands.errors import UsageError

if TYPE_CHECKING:
    from shadowrl.commands.replay_policy import RecordedWeights, Run
    from shadowrl.replay.record import Record
    from shadowrl.serve.store.queries import RequestView, SessionView
    from shadowrl.types import Segment, Trajectory


def add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        help="a saved episode (`run --save`, `eval --save-dir`, train.save_rollouts) or a "
        "trace id: a session, request or response id of the trace store (serve.traces)",
    )
    parser.add_argument(
        "--from-turn", type=int, required=True, metavar="K",
        help="continue from right before turn K (1-based, as `shadowrl run` numbers them; "
        "K=2 keeps turn 1 as recorded); for a chat session, its K-th request",
    )  # fmt: skip
    parser.add_argument("--model", help="the policy to continue with (default: the recorded one)")
    parser.add_argument(
        "--branch", type=int, metavar="N",
        help="an agent session of the trace store: rebuild it before turn K (checked against "
        "the record), run N fresh continuations with live tools, judge them by the "
        "workspace's own tests and show their diffs side by side",
    )  # fmt: skip
    parser.add_argument(
        "--live-tools", action="store_true",
        help="run tool calls for real instead of answering with the recorded outputs",
    )  # fmt: skip
    parser.add_argument(
        "--tolerance", type=float, default=1e-3,
        help="largest |Δ logprob| the teacher-forced check accepts (default 1e-3; the weights "
        "that generated a record give ~1e-6 in float32)",
    )  # fmt: skip


def first_divergence(a: Trajectory, b: Trajectory) -> int | None:
    """The first (1-based) turn where two episodes differ, None if they are identical."""
    for k, (x, y) in enumerate(zip(a.steps, b.steps, strict=False), 1):
        if x != y:
            return k
    same = len(a.steps) == len(b.steps) and a.end == b.end
    same = same and [generated_part(s) for s in a.segments] == [
        generated_part(s) for s in b.segments
    ]
    return None if same else min(len(a.steps), len(b.steps)) + 1


def generated_part(seg: Segment) -> tuple[int, ...]:
    """A segment's ids up to its last generated token: the trailing tool output and
    generation prompt are not the policy's (a trace store records a turn's request
    only, so it ends there)."""
    last = max((i for i, m in enumerate(seg.loss_mask) if m), default=-1)
    return seg.token_ids[: last + 1]


def tail_runs(rec: Record, turn: int) -> list[Run]:
    """Every recorded generation from step `turn` (0-based) on, with the record's sampling."""
    from shadowrl.commands.replay_policy import Run
    from shadowrl.replay.record import generated_runs

    segs, agent = rec.trajectory.segments, rec.meta.get("agent", {})
    t, p = agent.get("temperature", 1.0), agent.get("top_p", 1.0)
    return [Run(segs[s], a, b, t, p) for s, a, b in generated_runs(segs)[turn:]]


def check_tail(weights: RecordedWeights, runs: list[Run], tolerance: float) -> int:
    """Print the teacher-forced gap; 1 when it is over `tolerance` (0 without local weights).
    Plain print: one unwrapped line, for logs and scripts."""
    from shadowrl.commands.replay_policy import tail_gap

    if not weights.local:
        print(f"no teacher-forced check: {weights.spec} is not local weights")
        return 0
    gap = tail_gap(weights, runs)
    ok = gap.max_abs <= tolerance
    print(
        f"teacher-forced recorded tail: max |Δ logprob| = {gap.max_abs:.2e} over {gap.tokens} "
        f"tokens (policy versions {list(gap.versions)}): "
        f"{'within' if ok else 'OVER'} tolerance {tolerance:g}"
    )
    return 0 if ok else 1


# ------------------------------------------------------------------ sources


def _store_session(ident: str, config: Config) -> SessionView:
    from shadowrl.serve.store.db import StoreError, open_engine, resolve_url
    from shadowrl.serve.store.queries import get_session

    if config.serve.traces is None:
        raise UsageError(f"{ident!r} is no file, and tracing is off (serve.traces is null)")
    url = resolve_url(config.serve.traces, config.run_dir)
    try:
        engine = open_engine(url, must_exist=True)
    except StoreError as e:
        raise UsageError(f"{ident!r} is no file, and {e}") from e
    try:
        view = get_session(engine, ident)
    finally:
        engine.dispose()
    if view is None:
        raise UsageError(
            f"{ident!r} is no file, and the trace store {url} has no session, request or "
            "response with that id (a private API key's traffic is never recorded)"
        )
    return view


def _load_file(path: Path) -> Record:
    from shadowrl.replay import record

    try:
        return record.load(path)
    except ValueError as e:
        raise UsageError(str(e)) from e


def run(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.commands.replay_policy import RecordedWeights

    path = Path(args.source)
    if path.is_file() or path.suffix == ".json":
        if not path.is_file():
            raise UsageError(f"{path}: no such file")
        if args.branch is not None:
            raise UsageError("--branch continues a served session: give its trace id")
        rec = _load_file(path)
        return replay_episode(rec, RecordedWeights(rec.meta, args.model, config), args, config)
    from shadowrl.realtime import (
        NotReplayable,
        agent_record,
        request_chain,
        served_agent_config,
    )

    view = _store_session(args.source, config)
    try:
        chain = request_chain(view)
    except NotReplayable as e:
        raise UsageError(str(e)) from e
    meta = {"model": chain[0].row.model, "checkpoint": chain[0].checkpoint}
    weights = RecordedWeights(meta, args.model, config)
    if args.branch is not None:
        from shadowrl.commands.replay_branch import replay_branches

        return replay_branches(view, weights, args, config)
    if view.session.kind != "agent":
        return replay_requests(chain, weights, args)
    agent = served_agent_config(view, config.agent)
    built = agent_record(view, weights.tokenizer(), agent)
    if not built.exact:
        print(
            f"session {view.session.id}: its messages do not re-render the recorded prompts "
            "(a follow-up message or a summary), so the loop cannot continue it; checking "
            "the recorded tokens only"
        )
        return replay_requests(list(built.chain), weights, args)
    return replay_episode(built.record, weights, args, config)


# ------------------------------------------------------------------ agent episodes


def replay_episode(rec: Record, weights: RecordedWeights, args: Any, config: Config) -> int:
    import asyncio

    from rich.console import Console

    from shadowrl.replay.record import generated_runs

    console, turn = Console(), args.from_turn - 1
    runs = generated_runs(rec.trajectory.segments)
    if not 0 < turn < len(rec.trajectory.steps) or len(runs) != len(rec.trajectory.steps):
        raise UsageError(
            f"--from-turn must be in 2..{len(rec.trajectory.steps)} "
            f"(the record has {len(rec.trajectory.steps)} turns)"
        )
    seg, start, _ = runs[turn]
    version = max(rec.trajectory.segments[seg].versions[start], 0)
    traj = asyncio.run(_continue(rec, weights, version, args, config, console))
    diverged = first_divergence(traj, rec.trajectory)
    console.print(f"end: {traj.end} (recorded: {rec.trajectory.end})")
    console.print(
        "regenerated the recorded tail token for token"
        if diverged is None
        else f"diverged from the record at turn {diverged}"
    )
    return check_tail(weights, tail_runs(rec, turn), args.tolerance)


async def _continue(
    rec: Record, weights: RecordedWeights, version: int, args: Any, config: Config, console: Any
) -> Trajectory:
    import asyncio
    import contextlib

    from shadowrl.agent import ToolSet, run_episode
    from shadowrl.agent.config import AgentConfig
    from shadowrl.commands.run import _print_step, _WithSpinner
    from shadowrl.replay import record
    from shadowrl.replay.record import RecordedOutputs

    agent = AgentConfig.model_validate(rec.meta["agent"])  # the recorded budgets, sampling
    tools = ToolSet.from_names(agent.tools)
    if not args.live_tools:
        tools = RecordedOutputs(tools, rec.trajectory.steps)
    turn = args.from_turn - 1
    async with contextlib.AsyncExitStack() as stack:
        task, prepared, fresh = await _fresh_workspace(rec, config, stack)
        factory = await stack.enter_async_context(weights.policy(version))
        try:
            cp = await asyncio.to_thread(record.checkpoint_at, rec, turn, fresh, agent)
        except ValueError as e:
            raise UsageError(str(e)) from e
        stack.callback(cp.release)
        sandbox = cp.fork()
        stack.callback(sandbox.close)
        name = task.instance_id if task is not None else rec.meta.get("session", "session")
        console.rule(f"[bold]{name} · replay from turn {args.from_turn} · {weights.label(version)}")
        steps = iter(range(args.from_turn, agent.max_turns + 1))
        return await run_episode(
            _WithSpinner(factory(task, prepared), console), sandbox, "",
            tokenizer=factory.tokenizer, config=agent, tools=tools, start=cp,
            on_step=lambda step: _print_step(console, step, next(steps)),
        )  # fmt: skip
    raise AssertionError("unreachable")


async def _fresh_workspace(rec: Record, config: Config, stack: Any) -> tuple[Any, Any, Any]:
    """(task, prepared task, a sandbox on the episode's starting workspace); a served
    session has no task (None, None: its policy is the shared engine's)."""
    import asyncio

    from shadowrl.commands.run import resolve_task
    from shadowrl.tasks import Task, prepare

    spec, meta = episode_spec(config), rec.meta
    if meta.get("source") == "trace":
        sandbox = await asyncio.to_thread(_session_workspace, meta.get("workspace"), config, stack)
        stack.push_async_callback(asyncio.to_thread, sandbox.close)
        return None, None, sandbox
    if "task_json" in meta:
        task = Task.model_validate(meta["task_json"])
    else:
        task = resolve_task(meta["task"], meta["id"], meta.get("suite", config.tasks.suite))
    prepared = await asyncio.to_thread(prepare, task, config.tasks.cache_dir)
    sandbox = await asyncio.to_thread(spec.open_sandbox, prepared)
    stack.push_async_callback(asyncio.to_thread, sandbox.close)
    return task, prepared, sandbox


def _session_workspace(label: str | None, config: Config, stack: Any) -> Any:
    """A sandbox on a fresh copy of a served session's workspace (`path[@commit]`)."""
    import shutil
    import tempfile

    from shadowrl.sandbox import create_sandbox
    from shadowrl.serve import workspaces

    if not label:
        raise UsageError("the session records no workspace to rebuild")
    source, _, commit = label.partition("@")
    into = Path(tempfile.mkdtemp(prefix="replay-")) / "workspace"
    stack.callback(shutil.rmtree, into.parent, True)
    try:
        snap = workspaces.take_snapshot(Path(source), source, commit or None, into)
    except workspaces.WorkspaceError as e:
        raise UsageError(f"the session's workspace {label}: {e}") from e
    sb = config.sandbox
    return create_sandbox(snap.copy, sb.backend, sb.limits)


# ------------------------------------------------------------------ chat / completions


def replay_requests(chain: list[RequestView], weights: RecordedWeights, args: Any) -> int:
    """Teacher-force requests K.. of a chain; regenerate each from its recorded prompt."""
    import asyncio

    from shadowrl.commands.replay_policy import Run
    from shadowrl.realtime import request_segment

    k = args.from_turn
    if not 1 <= k <= len(chain):
        raise UsageError(
            f"--from-turn must be in 1..{len(chain)} (the session has {len(chain)} requests)"
        )
    tail = chain[k - 1 :]
    if weights.local:
        asyncio.run(_regenerate(tail, weights))
    runs = [
        Run(seg, len(r.prompt_ids), len(seg.token_ids), r.row.temperature, r.row.top_p)
        for r in tail
        if (seg := request_segment(r)) and r.generated_ids
    ]
    return check_tail(weights, runs, args.tolerance)


async def _regenerate(tail: list[RequestView], weights: RecordedWeights) -> None:
    from shadowrl.types import SamplingParams

    version = max((v for r in tail for v in r.versions[:1]), default=0)
    async with weights.policy(version) as factory:
        tok = factory.tokenizer
        for r in tail:
            sp = SamplingParams(
                max_new_tokens=max(len(r.generated_ids), 1), temperature=r.row.temperature,
                top_p=r.row.top_p, seed=r.row.seed,
            )  # fmt: skip
            gen = await factory.policy.generate(r.prompt_ids, sp)  # type: ignore[attr-defined]
            same = tuple(gen.token_ids) == tuple(r.generated_ids)
            print(f"request {r.id}: {tok.decode(r.generated_ids, skip_special_tokens=True)!r}")
            print(
                "  regenerated token for token"
                if same
                else f"  regenerated: {tok.decode(gen.token_ids, skip_special_tokens=True)!r}"
            )
