"""The harness version pins behaviour: what the model sees and what the tools return.

It must not move when only source text or file locations change, and must move
when the prompt, a tool's schema, a tool's output or the chat rendering changes.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import shadowrl
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.tools import TOOLS, FunctionTool
from shadowrl.eval.pins import (
    FIXTURE_CALLS,
    _fixture_episode,
    compute_harness_version,
    harness_version,
)

AGENT = AgentConfig()


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from shadowrl.models import load_tokenizer

    return load_tokenizer("smollm2")


def test_every_tool_is_exercised_by_the_fixture(tokenizer: Any) -> None:
    assert set(FIXTURE_CALLS) == set(TOOLS)  # a new tool needs a fixture call
    traj = _fixture_episode(tokenizer, AGENT)
    results = {r.name: r for s in traj.steps for r in s.results}
    assert traj.end == "submitted" and not any(s.parse_errors for s in traj.steps)
    assert set(results) == set(AGENT.tools)
    # Only semantic_search's (deliberately refused) call fails; the rest did their job.
    assert [n for n, r in results.items() if r.is_error] == ["semantic_search"]
    assert "x + y" in results["edit_file"].output and "F401" in results["lint"].output


def test_pin_is_stable_and_cached(tokenizer: Any) -> None:
    pin = harness_version(tokenizer, AGENT)
    assert harness_version(tokenizer, AGENT) == pin
    # Recomputed from scratch: fresh temp dirs, fresh sandbox, same pin.
    assert compute_harness_version(tokenizer, AGENT) == pin


def test_pin_ignores_source_text_and_location(tokenizer: Any, tmp_path: Path) -> None:
    """A copy of the package elsewhere, every agent file's lines shifted by a comment."""
    copy_root = tmp_path / "elsewhere" / "src"
    shutil.copytree(
        Path(shadowrl.__file__).parent, copy_root / "shadowrl",
        ignore=shutil.ignore_patterns("__pycache__"),
    )  # fmt: skip
    for py in (copy_root / "shadowrl" / "agent").rglob("*.py"):
        py.write_text("# a cosmetic comment that moves every line down\n" + py.read_text())
    script = (
        "import shadowrl, sys\n"
        "from shadowrl.agent.config import AgentConfig\n"
        "from shadowrl.eval.pins import harness_version\n"
        "from shadowrl.models import load_tokenizer\n"
        "print(shadowrl.__file__)\n"
        "print(harness_version(load_tokenizer('smollm2'), AgentConfig()))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(copy_root)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert Path(out[0]).is_relative_to(copy_root)  # the copy ran, not this checkout
    assert out[1] == harness_version(tokenizer, AGENT)


def test_pin_changes_with_the_prompt_and_the_tool_set(tokenizer: Any) -> None:
    pin = harness_version(tokenizer, AGENT)
    other_prompt = AGENT.model_copy(update={"system_prompt": AGENT.system_prompt + " Be brief."})
    fewer_tools = AGENT.model_copy(update={"tools": tuple(t for t in AGENT.tools if t != "lint")})
    assert harness_version(tokenizer, other_prompt) != pin
    assert harness_version(tokenizer, fewer_tools) != pin


def test_pin_changes_with_a_tools_output(tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pin = compute_harness_version(tokenizer, AGENT)
    old = TOOLS["write_file"]
    assert isinstance(old, FunctionTool)

    def write_file(ctx: Any, path: str, content: str) -> str:
        ctx.sandbox.write_file(path, content)
        return f"Saved {path}."  # same effect, different report

    new = dataclasses.replace(old, fn=write_file)
    assert new.schema == old.schema
    monkeypatch.setitem(TOOLS, "write_file", new)
    assert compute_harness_version(tokenizer, AGENT) != pin


def test_pin_changes_with_a_tools_schema(tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pin = compute_harness_version(tokenizer, AGENT)
    old = TOOLS["list_dir"]
    assert isinstance(old, FunctionTool)
    new = dataclasses.replace(old, description="List the entries of a directory.")
    monkeypatch.setitem(TOOLS, "list_dir", new)
    assert compute_harness_version(tokenizer, AGENT) != pin


def test_pin_changes_with_the_chat_rendering(tokenizer: Any) -> None:
    """Same tokenizer name, a template with a blank line between turns: a new pin."""
    spaced = copy.deepcopy(tokenizer)
    old_end = "'<|im_end|>' + '\n'"
    assert old_end in spaced.chat_template
    spaced.chat_template = spaced.chat_template.replace(old_end, "'<|im_end|>' + '\n\n'")
    assert spaced.name_or_path == tokenizer.name_or_path  # the cache must not mix them up
    assert harness_version(spaced, AGENT) != harness_version(tokenizer, AGENT)
