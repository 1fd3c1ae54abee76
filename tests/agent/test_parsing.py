"""Hermes tool-call parsing: good calls and every kind of malformed call."""

from __future__ import annotations

from shadowrl.agent.parsing import parse_tool_calls
from shadowrl.agent.tools import ToolSet

SCHEMAS = ToolSet.from_names(["read_file", "run", "submit", "lint"]).schemas()


def test_single_call_and_content() -> None:
    text = (
        'Looking.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'
    )
    content, calls, errors = parse_tool_calls(text, SCHEMAS, id_prefix="t3")
    assert content == "Looking."
    assert errors == []
    assert [(c.id, c.name, c.arguments) for c in calls] == [("t3_0", "read_file", {"path": "a.py"})]


def test_several_calls_in_order() -> None:
    text = (
        '<tool_call>{"name": "read_file", "arguments": {"path": "a", "start_line": 3}}</tool_call>'
        '<tool_call>{"name": "run", "arguments": {"command": "ls"}}</tool_call>'
        '<tool_call>{"name": "submit"}</tool_call>'
    )
    _, calls, errors = parse_tool_calls(text, SCHEMAS)
    assert errors == []
    assert [c.name for c in calls] == ["read_file", "run", "submit"]
    assert [c.id for c in calls] == ["call_0", "call_1", "call_2"]
    assert calls[2].arguments == {}


def test_stringified_arguments_and_unclosed_final_tag() -> None:
    text = '<tool_call>{"name": "run", "arguments": "{\\"command\\": \\"ls\\"}"}'
    _, calls, errors = parse_tool_calls(text, SCHEMAS)
    assert errors == [] and calls[0].arguments == {"command": "ls"}


def test_no_calls() -> None:
    assert parse_tool_calls("just talking", SCHEMAS) == ("just talking", (), [])


def _error(text: str) -> str:
    _, calls, errors = parse_tool_calls(text, SCHEMAS)
    assert calls == () and len(errors) == 1
    return errors[0]


def test_bad_json() -> None:
    err = _error('<tool_call>{"name": "run", "arguments": {"command": "ls"}</tool_call>')
    assert err.startswith("tool call 1: invalid JSON") and "line 1 column" in err


def test_unclosed_tag_with_bad_json_mentions_missing_close() -> None:
    err = _error('<tool_call>{"name": "run", "argu')
    assert "no closing </tool_call>" in err


def test_not_an_object_and_missing_name() -> None:
    assert "must be a JSON object, got array" in _error("<tool_call>[1, 2]</tool_call>")
    assert "missing string field 'name'" in _error('<tool_call>{"arguments": {}}</tool_call>')


def test_unknown_tool_lists_available() -> None:
    err = _error('<tool_call>{"name": "delete_repo", "arguments": {}}</tool_call>')
    assert "unknown tool 'delete_repo'" in err and "read_file, run, submit, lint" in err


def test_missing_extra_and_wrong_type_arguments() -> None:
    assert "read_file: missing required argument(s) 'path'" in _error(
        '<tool_call>{"name": "read_file", "arguments": {}}</tool_call>'
    )
    err = _error(
        '<tool_call>{"name": "run", "arguments": {"command": "ls", "cwd": "/"}}</tool_call>'
    )
    assert "unexpected argument(s) 'cwd'; allowed: command" in err
    err = _error(
        '<tool_call>{"name": "read_file", "arguments": {"path": "a", "start_line": "3"}}</tool_call>'
    )
    assert "argument 'start_line' must be integer, got string" in err
    err = _error('<tool_call>{"name": "lint", "arguments": {"paths": "a.py"}}</tool_call>')
    assert "'paths' must be array, got string" in err


def test_bool_is_not_an_integer_and_wrong_top_level_field() -> None:
    err = _error(
        '<tool_call>{"name": "read_file", "arguments": {"path": "a", "end_line": true}}</tool_call>'
    )
    assert "must be integer, got boolean" in err
    err = _error('<tool_call>{"name": "run", "parameters": {"command": "ls"}}</tool_call>')
    assert "unexpected field(s) 'parameters'" in err


def test_good_calls_survive_next_to_bad_ones() -> None:
    text = (
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "run", "arguments": {"command": "ls"}}</tool_call>'
    )
    _, calls, errors = parse_tool_calls(text, SCHEMAS)
    assert [c.name for c in calls] == ["run"] and calls[0].id == "call_1"
    assert len(errors) == 1 and errors[0].startswith("tool call 1: unknown tool")
