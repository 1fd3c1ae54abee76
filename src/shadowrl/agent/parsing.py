"""Hermes `<tool_call>` text → typed `ToolCall`s, with errors a model can act on.

A small model's calls are often slightly wrong. Each mistake gets one precise line
(which call, what is wrong, what was expected) so the model can fix it next turn,
and the loop counts it. Well-formed calls in the same reply still run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from shadowrl.types import ToolCall

_CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


class ParsedReply(NamedTuple):
    """Text outside the tags, the well-formed calls in order, one message per bad call."""

    content: str
    calls: tuple[ToolCall, ...]
    errors: list[str]


def _schemas_by_name(tools: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for t in tools:
        fn = t.get("function", t)
        out[fn["name"]] = fn.get("parameters") or {"type": "object", "properties": {}}
    return out


def _type_name(value: Any) -> str:
    for name, types in _JSON_TYPES.items():
        if isinstance(value, types) and not (isinstance(value, bool) and name != "boolean"):
            return name
    return "null" if value is None else type(value).__name__


def check_arguments(name: str, args: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Errors for missing, unexpected and wrongly-typed arguments against a JSON schema."""
    props: Mapping[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in args]
    extra = [k for k in args if k not in props]
    errors = []
    if missing:
        errors.append(f"{name}: missing required argument(s) {', '.join(map(repr, missing))}")
    if extra:
        allowed = ", ".join(props) or "none"
        errors.append(
            f"{name}: unexpected argument(s) {', '.join(map(repr, extra))}; allowed: {allowed}"
        )
    for key, value in args.items():
        want, got = props.get(key, {}).get("type"), _type_name(value)
        ok = got == want or (want == "number" and got == "integer")
        if (
            isinstance(want, str) and want in _JSON_TYPES and not ok
        ):  # ["string", "null"]: unchecked
            errors.append(f"{name}: argument {key!r} must be {want}, got {got}")
    return errors


def _parse_one(
    body: str, closed: bool, schemas: Mapping[str, dict[str, Any]] | None
) -> tuple[str, dict[str, Any]] | str:
    """One tag body → (name, arguments) or an error message."""
    hint = '; expected {"name": "<tool>", "arguments": {...}}'
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        where = f"line {e.lineno} column {e.colno}"
        missing_close = "" if closed else " (and no closing </tool_call>)"
        return f"invalid JSON: {e.msg} at {where}{missing_close}{hint}"
    if not isinstance(obj, dict):
        return f"the call must be a JSON object, got {_type_name(obj)}{hint}"
    name = obj.get("name")
    if not isinstance(name, str):
        return f"missing string field 'name'{hint}"
    args = obj.get("arguments", {})
    if isinstance(args, str):  # OpenAI-style stringified arguments
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as e:
            return f"{name}: 'arguments' is a string but not valid JSON ({e.msg})"
    if not isinstance(args, dict):
        return f"{name}: 'arguments' must be an object, got {_type_name(args)}"
    if extra := sorted(set(obj) - {"name", "arguments"}):
        return f"{name}: unexpected field(s) {', '.join(map(repr, extra))}{hint}"
    if schemas is not None:
        if name not in schemas:
            return f"unknown tool {name!r}; available: {', '.join(schemas)}"
        if errors := check_arguments(name, args, schemas[name]):
            return "; ".join(errors)
    return name, args


def parse_tool_calls(
    text: str, tools: Sequence[dict[str, Any]] | None = None, *, id_prefix: str = "call"
) -> ParsedReply:
    """Split a reply into its prose and its Hermes tool calls, validating each call.

    `tools` are OpenAI-style schemas; without them names and arguments are not checked.
    Call ids are `f"{id_prefix}_{i}"` with `i` the tag's position in the reply.
    """
    schemas = _schemas_by_name(tools) if tools is not None else None
    calls: list[ToolCall] = []
    errors: list[str] = []
    for i, m in enumerate(_CALL.finditer(text)):
        parsed = _parse_one(m.group(1).strip(), bool(m.group(2)), schemas)
        if isinstance(parsed, str):
            errors.append(f"tool call {i + 1}: {parsed}")
        else:
            calls.append(ToolCall(id=f"{id_prefix}_{i}", name=parsed[0], arguments=parsed[1]))
    content = _CALL.sub("", text).replace("</tool_call>", "").strip()
    return ParsedReply(content, tuple(calls), errors)
