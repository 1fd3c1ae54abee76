"""`shadowrl run`: one agent episode on one task, printed as a readable transcript.

This is the quickest way to see the harness work end to end: the same loop, tools
and sandbox as training, with each turn (assistant text, tool calls, outputs,
errors) printed as it happens, then the workspace diff and whether the task's
test passes. `--model scripted` replays an expert that solves the demo task.
Heavy imports (torch, transformers) happen inside `cmd_run` only.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from shadowrl.config import Config
    from shadowrl.sandbox.base import Sandbox
    from shadowrl.types import Generation, Policy, SamplingParams, Step, Trajectory


def add_run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", default="demo", help="task directory, or 'demo' (built in)")
    parser.add_argument(
        "--model", default=None,
        help="'scripted' (expert for the demo), 'tiny', 'smollm2' or a model path "
        "(default: config model.path)",
    )  # fmt: skip
    parser.add_argument("--greedy", action="store_true", help="decode greedily (temperature 0)")


class _WithSpinner:
    """A Policy wrapper that shows a spinner while the model generates."""

    def __init__(self, policy: Policy, console: Console):
        self.policy, self.console, self.turn = policy, console, 0

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        self.turn += 1
        msg = f"turn {self.turn}: generating (context {len(prompt_ids)} tokens, ≤{sampling.max_new_tokens} new)"
        with self.console.status(msg):
            return await self.policy.generate(prompt_ids, sampling)


def _load_policy(model: str, config: Config, task_id: str) -> tuple[Policy, Any]:
    from shadowrl.agent.policies import ScriptedPolicy
    from shadowrl.models import ModelConfig, load_model, load_tokenizer

    if model == "scripted":
        if task_id != "demo-median":
            raise SystemExit("--model scripted only knows how to solve the demo task")
        from shadowrl.agent.demo import demo_expert_replies

        tokenizer = load_tokenizer("smollm2")
        return ScriptedPolicy(tokenizer, demo_expert_replies()), tokenizer
    from shadowrl.inference.engine import Engine

    model_config = ModelConfig(**{**config.model.model_dump(), "path": model})
    hf_model, tokenizer = load_model(model_config)
    # the same batched engine that serves and trains; a context manager (decode thread)
    return Engine(hf_model, tokenizer, config.engine, seed=config.seed), tokenizer


def _print_step(console: Console, step: Step, index: int) -> None:
    from rich.markup import escape
    from rich.panel import Panel

    from shadowrl.agent.parsing import parse_tool_calls

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


def workspace_diff(sandbox: Sandbox, original: Any) -> str:
    """Unified diff of every changed text file against the task's original `repo/`."""
    present = set(sandbox.list_files())
    chunks: list[str] = []
    for path in sandbox.changed_files():
        if path.endswith(".pyc") or "__pycache__/" in path:
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


def _print_summary(console: Console, traj: Trajectory, diff: str, passed: bool) -> None:
    from rich.syntax import Syntax
    from rich.table import Table

    console.print(Syntax(diff or "(no changes)", "diff", theme="ansi_dark"))
    table = Table(show_header=False, box=None)
    for key, value in [
        ("end", traj.end),
        ("turns", traj.num_turns),
        ("generated tokens", traj.num_generated),
        ("context tokens", len(traj.segments[0].token_ids)),
        ("malformed calls", traj.tool_errors),
        ("failed tool calls", traj.info["tool_failures"]),
        ("nudges", traj.info["nudges"]),
        ("wall", f"{traj.wall_s:.1f}s"),
        ("tests", "[green]PASS[/green]" if passed else "[red]FAIL[/red]"),
    ]:
        table.add_row(f"[bold]{key}[/bold]", str(value))
    console.print(table)


def cmd_run(args: argparse.Namespace, config: Config) -> int:
    import asyncio
    import contextlib

    from rich.console import Console

    from shadowrl.agent.demo import load_dir_task
    from shadowrl.agent.loop import run_episode
    from shadowrl.sandbox import create_sandbox

    console = Console()
    task = load_dir_task(args.task)
    agent_config = config.agent.model_copy(update={"temperature": 0.0} if args.greedy else {})
    with console.status(f"loading model {args.model or config.model.path}"):
        policy, tokenizer = _load_policy(args.model or config.model.path, config, task.id)
    console.rule(f"[bold]{task.id}")
    console.print(task.problem)
    with contextlib.ExitStack() as stack:
        if isinstance(policy, contextlib.AbstractContextManager):
            stack.enter_context(policy)  # the engine's decode thread
        sandbox = create_sandbox(
            task.repo, backend=config.sandbox.backend, limits=config.sandbox.limits
        )
        stack.callback(sandbox.close)
        steps = iter(range(1, agent_config.max_turns + 1))
        traj = asyncio.run(
            run_episode(
                _WithSpinner(policy, console), sandbox, task.problem,
                tokenizer=tokenizer, config=agent_config, task_id=task.id,
                on_step=lambda step: _print_step(console, step, next(steps)),
            )
        )  # fmt: skip
        diff = workspace_diff(sandbox, task.repo)
        with console.status("running the task's test"):
            passed = sandbox.exec(task.test_cmd, timeout=agent_config.run_timeout_s).exit_code == 0
    _print_summary(console, traj, diff, passed)
    return 0
