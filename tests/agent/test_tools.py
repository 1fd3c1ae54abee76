"""Every tool against a real workspace: outputs, bounds and the errors a model sees."""

from __future__ import annotations

from typing import Any

import pytest

from shadowrl.agent.config import AgentConfig
from shadowrl.agent.tools import TOOLS, ToolContext, ToolSet, bound
from shadowrl.types import ToolCall, ToolResult


@pytest.fixture
def ctx(demo_sandbox: Any) -> ToolContext:
    return ToolContext(demo_sandbox, AgentConfig(tool_output_chars=4000))


def call(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return ToolSet(TOOLS.values()).execute(ctx, ToolCall("c", name, args))


def test_schemas_come_from_signatures() -> None:
    fn = TOOLS["read_file"].schema["function"]
    assert fn["name"] == "read_file"
    assert fn["parameters"]["required"] == ["path"]
    props = fn["parameters"]["properties"]
    assert props["start_line"]["type"] == "integer" and props["end_line"]["type"] == "integer"
    lint = TOOLS["lint"].schema["function"]["parameters"]["properties"]["paths"]
    assert lint["type"] == "array" and lint["items"] == {"type": "string"}
    assert {n for n, t in TOOLS.items() if t.read_only} == {
        "read_file",
        "list_dir",
        "grep",
        "semantic_search",
        "lint",
    }


def test_read_file_numbers_and_ranges(ctx: ToolContext) -> None:
    out = call(ctx, "read_file", path="stats.py").output
    assert out.splitlines()[3] == "4\tdef mean(values: list[float]) -> float:"
    part = call(ctx, "read_file", path="stats.py", start_line=9, end_line=10).output
    assert part.splitlines()[0].startswith("9\tdef median")
    assert part.endswith("[lines 9-10 of 15]")


def test_read_file_is_bounded_by_lines(demo_sandbox: Any) -> None:
    demo_sandbox.write_file("big.txt", "\n".join(f"row {i}" for i in range(1000)))
    ctx = ToolContext(demo_sandbox, AgentConfig(read_file_lines=50))
    out = call(ctx, "read_file", path="big.txt").output
    assert out.endswith("[lines 1-50 of 1000]") and "51\t" not in out


def test_read_file_errors(ctx: ToolContext) -> None:
    missing = call(ctx, "read_file", path="nope.py")
    assert missing.is_error and "nope.py" in missing.output
    past = call(ctx, "read_file", path="stats.py", start_line=99)
    assert past.is_error and "past the end of stats.py (15 lines)" in past.output


def test_edit_file_replaces_unique_text(ctx: ToolContext) -> None:
    r = call(
        ctx,
        "edit_file",
        path="stats.py",
        old="    n = len(values)",
        new="    n = len(list(values))",
    )
    assert not r.is_error and "11\t    n = len(list(values))" in r.output
    assert b"n = len(list(values))" in ctx.sandbox.read_file("stats.py")


def test_edit_file_refuses_ambiguous_and_missing(ctx: ToolContext) -> None:
    before = ctx.sandbox.read_file("stats.py")
    many = call(ctx, "edit_file", path="stats.py", old="return ", new="yield ")
    assert many.is_error and "occurs 3 times in stats.py (lines 6, 14, 15)" in many.output
    none = call(ctx, "edit_file", path="stats.py", old="n = len(valuez)", new="x")
    assert none.is_error and "not found" in none.output and "Closest line is 11" in none.output
    indent = call(ctx, "edit_file", path="stats.py", old="n = len(values)\nmid = n // 2", new="x")
    assert indent.is_error and "Line 11 matches ignoring indentation" in indent.output
    assert call(ctx, "edit_file", path="stats.py", old="", new="x").is_error
    assert ctx.sandbox.read_file("stats.py") == before


def test_write_and_list_dir(ctx: ToolContext) -> None:
    assert call(ctx, "write_file", path="pkg/sub/new.py", content="a\nb\n").output == (
        "Wrote 2 lines to pkg/sub/new.py."
    )
    ctx.sandbox.write_file("__pycache__/x.pyc", b"\0")
    assert call(ctx, "list_dir").output.splitlines() == ["pkg/", "stats.py", "test_stats.py"]
    assert call(ctx, "list_dir", path="pkg").output == "sub/"
    assert call(ctx, "list_dir", path="./pkg/sub/").output == "new.py"
    assert call(ctx, "list_dir", path="missing").is_error


def test_grep_regex_glob_and_bounds(demo_sandbox: Any) -> None:
    ctx = ToolContext(demo_sandbox, AgentConfig(grep_max_hits=2))
    out = call(ctx, "grep", pattern=r"def \w+\(").output
    assert out.splitlines()[:2] == [
        "stats.py:4:def mean(values: list[float]) -> float:",
        "stats.py:9:def median(values: list[float]) -> float:",
    ]
    assert "more matches" in out
    only_tests = call(ctx, "grep", pattern="median", glob="test_*.py").output
    assert only_tests.startswith("test_stats.py:3:") and "stats.py:9" not in only_tests
    assert "No matches" in call(ctx, "grep", pattern="zebra").output
    literal = call(ctx, "grep", pattern="median(", path="stats.py").output
    assert "invalid regex" in literal and "stats.py:9:" in literal


def test_semantic_search_sees_new_files(ctx: ToolContext) -> None:
    from shadowrl.search import SemanticIndex, get_embedder, sandbox_texts

    ctx.index = SemanticIndex.build(sandbox_texts(ctx.sandbox), get_embedder("hash"))
    hits = call(ctx, "semantic_search", query="middle value median", k=3).output
    assert "stats.py:9-15 median (" in hits and hits.count("\n\n") == 2
    ctx.sandbox.write_file(
        "checksum.py", "def compute_checksum(data):\n    return sum(data) % 255\n"
    )
    hit = call(ctx, "semantic_search", query="checksum", k=1).output
    assert hit.startswith("checksum.py:1-2 compute_checksum")
    assert call(ctx, "semantic_search", query="x", k=0).is_error


def test_lint_changed_files_on_the_host(ctx: ToolContext) -> None:
    assert call(ctx, "lint").output == "No Python files to lint."
    ctx.sandbox.write_file("bad.py", "import os\n\ndef f():\n    return undefined_name\n")
    out = call(ctx, "lint").output
    assert "bad.py:1:8: F401" in out and "bad.py:4:12: F821" in out
    assert call(ctx, "lint", paths=["stats.py"]).output == "No lint errors in stats.py."


def test_run_reports_exit_code_streams_and_timeout(demo_sandbox: Any) -> None:
    ctx = ToolContext(demo_sandbox, AgentConfig(run_timeout_s=1.0))
    out = call(ctx, "run", command="echo hi; echo oops >&2; exit 3").output
    assert out == "exit code 3\nhi\n[stderr]\noops"
    slow = call(ctx, "run", command="sleep 5").output
    assert "timed out after 1s" in slow


def test_output_is_bounded_with_a_note(demo_sandbox: Any) -> None:
    ctx = ToolContext(demo_sandbox, AgentConfig(tool_output_chars=200))
    out = call(ctx, "run", command="seq 1 1000").output
    assert len(out) < 260 and "chars truncated" in out and out.endswith("1000")
    assert bound("short", 10) == "short"


def test_submit_marks_the_context(ctx: ToolContext) -> None:
    assert call(ctx, "submit").output == "Submitted." and ctx.submitted
