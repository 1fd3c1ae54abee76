"""Tools that run things: a shell command, ruff, and the episode controls `submit`, `summarize`.

`lint` runs ruff on the *host* over file contents read through the sandbox and fed
on stdin (`--stdin-filename`): ruff only parses, it never executes the code, so no
untrusted code runs outside the sandbox, and the sandbox image needs no ruff.
"""

from __future__ import annotations

import subprocess
import tempfile

from shadowrl.agent.tools.base import ToolContext, ToolError, tool

# Pinned rules (pyflakes + syntax/statement errors) so results do not depend on
# ruff's version defaults or on any config file found on the host.
_RUFF_RULES = "E4,E7,E9,F"


@tool("Run a shell command in the workspace root.", read_only=False)
def run(ctx: ToolContext, command: str) -> str:
    timeout = min(ctx.config.run_timeout_s, max(ctx.remaining_s(), 1.0))
    r = ctx.sandbox.exec(command, timeout=timeout)
    parts = [
        f"exit code {r.exit_code}" + (f" (timed out after {timeout:.0f}s)" if r.timed_out else "")
    ]
    if r.stdout:
        parts.append(r.stdout.rstrip())
    if r.stderr:
        parts.append("[stderr]\n" + r.stderr.rstrip())
    if r.truncated:
        parts.append("[output truncated by the sandbox]")
    return "\n".join(parts)


def _ruff(path: str, source: str) -> str:
    from ruff import find_ruff_bin

    with tempfile.TemporaryDirectory() as cwd:  # no config file can be discovered from here
        proc = subprocess.run(
            [find_ruff_bin(), "check", "--isolated", "--select", _RUFF_RULES, "--no-fix",
             "--output-format", "concise", "--stdin-filename", path, "-"],
            input=source, capture_output=True, text=True, timeout=30, cwd=cwd,
        )  # fmt: skip
    if proc.returncode not in (0, 1):
        raise ToolError(f"ruff failed on {path}: {proc.stderr.strip()}")
    return "\n".join(line for line in proc.stdout.splitlines() if line.startswith(f"{path}:"))


@tool("Lint Python files with ruff.", read_only=True, paths="default: files you changed")
def lint(ctx: ToolContext, paths: list[str] | None = None) -> str:
    if paths is None:  # changed files that still exist
        paths = sorted(set(ctx.sandbox.changed_files()) & set(ctx.sandbox.list_files()))
    targets = [p for p in paths if p.endswith(".py")]
    if not targets:
        return "No Python files to lint."
    findings = [out for p in targets if (out := _ruff(p, ctx.read_text(p)))]
    return "\n".join(findings) or f"No lint errors in {', '.join(targets)}."


@tool("Finish: submit the workspace as your answer.", read_only=False)
def submit(ctx: ToolContext) -> str:
    ctx.submitted = True
    return "Submitted."


@tool(
    "Replace your history with a short summary you write next (when the context grows long).",
    read_only=False,
)
def summarize(ctx: ToolContext) -> str:
    ctx.summary_requested = True  # the loop asks for the summary once this turn's calls ran
    return "Write the summary now."
