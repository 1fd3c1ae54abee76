"""`shadowrl run`: one graded agent episode on one task, printed as a readable transcript.

This is the quickest way to see the harness work end to end: the same loop, tools,
sandbox and grader as training (`episode.graded_episode`), with each turn (assistant
text, tool calls, outputs, errors) printed as it happens, then the workspace diff and
the hidden tests' verdict. `--model scripted` plays the scripted expert (it knows the
task's gold patch). Heavy imports (torch, transformers) happen inside `run` only.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.commands.config import Config, episode_spec
from shadowrl.commands.errors import UsageError
from shadowrl.tasks import SuiteNotFound, Task, TaskFileError, load_suite, load_tasks

if TYPE_CHECKING:
    from rich.console import Console

    from shadowrl.sandbox import Sandbox
    from shadowrl.tasks import Verdict
    from shadowrl.types import Generation, Policy, SamplingParams, Step, Trajectory


def add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--task", default="demo",
        help="'demo' (built in), an instance id of tasks.suite, a task JSONL file "
        "(with --id if it holds several) or a directory holding task.json (one task record)",
    )  # fmt: skip
    parser.add_argument("--id", help="which task of a JSONL file")
    parser.add_argument(
        "--model", default=None,
        help="scripted | gold | noop | smollm2 | tiny | tiny-moe | <HF dir> | <.gguf> | http(s)://... "
        "(default: config model.path)",
    )  # fmt: skip
    parser.add_argument("--greedy", action="store_true", help="decode greedily (temperature 0)")
    parser.add_argument(
        "--save", type=Path, metavar="TRAJECTORY.json",
        help="write the episode (messages, steps, token segments, the changed files after "
        "each turn) for `shadowrl replay`",
    )  # fmt: skip


def _pick(tasks: list[Task], wanted: str | None, where: str) -> Task:
    if wanted is not None:
        found = [t for t in tasks if t.instance_id == wanted]
        if not found:
            raise UsageError(f"{where} has no task {wanted!r}")
        return found[0]
    if len(tasks) != 1:
        raise UsageError(f"{where} holds {len(tasks)} tasks: choose one with --id")
    return tasks[0]


def resolve_task(spec: str, task_id: str | None, suite: str) -> Task:
    """The task `--task` names (see `add_args`); a wrong name is a UsageError."""
    path = Path(spec)
    try:
        if spec == "demo":
            return load_suite("demo")[0]
        if path.is_dir():
            record = path / "task.json"
            if not record.is_file():
                raise UsageError(
                    f"{path} has no task.json: a task directory holds one task record "
                    "(the JSON of one line of a task file, seed paths relative to it)"
                )
            return _pick(load_tasks(record), task_id, str(record))
        if path.is_file():
            return _pick(load_tasks(path), task_id, str(path))
        return _pick(load_suite(suite), spec, f"suite {suite!r}")
    except TaskFileError as e:
        raise UsageError(str(e)) from e
    except SuiteNotFound as e:
        raise UsageError(f"--task {spec!r} is no file or directory, and {e}") from e


class _WithSpinner:
    """A Policy wrapper that shows a spinner while the model generates."""

    def __init__(self, policy: Policy, console: Console):
        self.policy, self.console, self.turn = policy, console, 0

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        self.turn += 1
        msg = f"turn {self.turn}: generating (context {len(prompt_ids)} tokens, ≤{sampling.max_new_tokens} new)"
        with self.console.status(msg):
            return await self.policy.generate(prompt_ids, sampling)


def _print_step(console: Console, step: Step, index: int) -> None:
    from rich.markup import escape
    from rich.panel import Panel

    from shadowrl.agent import parse_tool_calls

    # The prose; the raw reply only when a call was malformed, to show what went wrong.
    text = step.text if step.parse_errors else parse_tool_calls(step.text).content
    body = [escape(text.strip()) or "[dim](no text)[/dim]"]
    for call, result in zip(step.tool_calls, step.results, strict=True):
        style = "red" if result.is_error else "green"
        args = escape(json.dumps(call.arguments)[:300])
        body.append(f"\n[bold cyan]→ {call.name}[/bold cyan] {args}")
        body.append(f"[{style}]{escape(result.output)}[/{style}]")
    body += [f"\n[bold red]malformed call:[/bold red] {escape(e)}" for e in step.parse_errors]
    title = f"turn {index} · {step.num_generated} tokens"
    console.print(Panel("\n".join(body), title=title, title_align="left", border_style="blue"))


CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def workspace_diff(sandbox: Sandbox, original: Any) -> str:
    """Unified diff of every changed text file against the task's original workspace
    (caches the tools leave behind, such as `.pytest_cache/`, are not the agent's work)."""
    present = set(sandbox.list_files())
    chunks: list[str] = []
    for path in sandbox.changed_files():
        if path.endswith(".pyc") or CACHE_DIRS.intersection(path.split("/")[:-1]):
            continue
        old_file = original / path
        old = old_file.read_text(errors="replace").splitlines(True) if old_file.is_file() else []
        new = (
            sandbox.read_file(path).decode(errors="replace").splitlines(True)
            if path in present
            else []
        )
        chunks += difflib.unified_diff(old, new, f"a/{path}", f"b/{path}")
    return "".join(chunks)


def _print_summary(console: Console, traj: Trajectory, diff: str, verdict: Verdict) -> None:
    from rich.syntax import Syntax
    from rich.table import Table

    console.print(Syntax(diff or "(no changes)", "diff", theme="ansi_dark"))
    table = Table(show_header=False, box=None)
    for key, value in [
        ("end", traj.end),
        ("turns", traj.num_turns),
        ("generated tokens", traj.num_generated),
        ("context tokens", " + ".join(str(len(s.token_ids)) for s in traj.segments)),
        ("malformed calls", traj.tool_errors),
        ("failed tool calls", traj.info["tool_failures"]),
        ("nudges", traj.info["nudges"]),
        ("wall", f"{traj.wall_s:.1f}s"),
        ("hidden tests", "[green]PASS[/green]" if verdict.resolved else "[red]FAIL[/red]"),
        ("reward", f"{traj.reward:.2f}"),
    ]:
        table.add_row(f"[bold]{key}[/bold]", str(value))
    console.print(table)


def run(args: argparse.Namespace, config: Config) -> int:
    import asyncio
    import contextlib
    import dataclasses

    from rich.console import Console

    from shadowrl.commands.policies import open_policy, policy_kind
    from shadowrl.episode import graded_episode
    from shadowrl.replay import record
    from shadowrl.tasks import prepare

    console = Console()
    task = resolve_task(args.task, args.id, config.tasks.suite)
    spec = episode_spec(config)
    if args.greedy:
        spec = dataclasses.replace(spec, agent=spec.agent.model_copy(update={"temperature": 0.0}))
    model = args.model or config.model.path
    if policy_kind(model) == "reference":  # the budgets `eval` gives them: whole files typed
        spec = spec.for_reference()

    async def episode() -> tuple[Trajectory, Verdict, str]:
        async with contextlib.AsyncExitStack() as stack:
            with console.status(f"preparing {task.instance_id} and loading {model}"):
                prepared = await asyncio.to_thread(prepare, task, config.tasks.cache_dir)
                factory = await stack.enter_async_context(open_policy(model, config))
                sandbox = await asyncio.to_thread(spec.open_sandbox, prepared)
                stack.push_async_callback(asyncio.to_thread, sandbox.close)
            console.rule(f"[bold]{task.instance_id}")
            console.print(task.problem_statement)
            steps, files = iter(range(1, spec.agent.max_turns + 1)), []

            def on_step(step: Step) -> None:
                _print_step(console, step, next(steps))
                if args.save is not None:
                    files.append(record.changed_files(sandbox))

            traj, verdict = await graded_episode(
                _WithSpinner(factory(task, prepared), console), sandbox, prepared,
                tokenizer=factory.tokenizer, spec=spec, on_step=on_step,
            )  # fmt: skip
            if args.save is not None:
                meta = {"task": args.task, "id": task.instance_id, "model": model}
                record.save(
                    args.save, traj, files, **meta, agent=spec.agent.model_dump(mode="json")
                )
            return traj, verdict, workspace_diff(sandbox, prepared.workspace)

    traj, verdict, diff = asyncio.run(episode())
    _print_summary(console, traj, diff, verdict)
    return 0
