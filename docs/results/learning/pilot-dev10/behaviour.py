"""What a policy does with the check, read from `shadowrl eval --save-dir` episodes.

    python docs/results/learning/pilot-dev10/behaviour.py EVAL_JSON [EPISODES_DIR] > out.json

Per attempt: resolved, code changed (`diff_lines`), malformed calls, turns, submitted; with
the episodes, also: ran the report's call before its first edit, and each check after an
edit (a run of the call): did it show the expected outcome (`_shows`), and what came next (another
edit, or tests/submit). Prints totals as JSON.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

EDITS = {"edit_file", "write_file"}
_NEXT = ("edit", "check", "tests", "submit", "read_file", "end")


def expected(statement: str) -> str:
    """The report's expected outcome: a value's repr, or an exception's type."""
    found = re.search(r"but it should (?:return|raise) `(.+?)`\.", statement, re.S)
    return found[1] if found else ""


def _is_check(call: dict[str, Any], function: str) -> bool:
    command = str(call.get("arguments", {}).get("command", ""))
    return call["name"] == "run" and "python" in command and f"{function}(" in command


def _shows(output: str, want: str, command: str) -> bool:
    """The check shows the expected outcome: it exits 0 after asserting it (pilot 11's form:
    the verdict is the exit code, whatever the policy asserted), or it prints the expected
    value or raises the expected exception (pilot 10's form)."""
    lines = output.strip().splitlines()
    if output.startswith("exit code 0"):
        asserted = "assert " in command or "pytest.raises" in command
        return asserted or (len(lines) >= 2 and lines[1].strip() == want)
    return bool(lines) and lines[-1].split(":")[0].strip() == want


def _kind(rest: list[dict[str, Any]], function: str) -> str:
    """What the policy did next: edit, check (the call again), tests (another run), submit."""
    if not rest:
        return "end"
    if rest[0]["name"] in EDITS:
        return "edit"
    if rest[0]["name"] == "run":
        return "check" if _is_check(rest[0], function) else "tests"
    return rest[0]["name"]


def episode_facts(episode: dict[str, Any], want: str, function: str) -> dict[str, Any]:
    """Check-related facts of one saved episode."""
    calls, outputs = [], {}
    for m in episode["messages"]:
        calls += [c for c in m.get("tool_calls") or []]
        if m["role"] == "tool":
            outputs[m.get("tool_call_id")] = m["content"]
    edited, first_check_before_edit, checks = False, False, []
    for i, c in enumerate(calls):
        if c["name"] in EDITS:
            edited = True
        elif _is_check(c, function):
            if not edited:
                first_check_before_edit = True
                continue
            command = str(c.get("arguments", {}).get("command", ""))
            right = _shows(outputs.get(c["id"], ""), want, command)
            checks.append({"right": right, "next": _kind(calls[i + 1 :], function)})
    return {"checked_first": first_check_before_edit, "checks_after_edit": checks}


def main(eval_json: str, episodes: str | None = None) -> dict[str, Any]:
    result = json.loads(Path(eval_json).read_text())
    attempts = [(t, s) for t in result["tasks"] for s in t["samples"]]
    out: dict[str, Any] = {
        "attempts": len(attempts),
        "resolved": sum(s["resolved"] for _, s in attempts),
        "no_change": sum(s["diff_lines"] == 0 for _, s in attempts),
        "resolved_of_changed": sum(s["resolved"] for _, s in attempts if s["diff_lines"] > 0),
        "malformed_per_episode": sum(s["tool_errors"] for _, s in attempts) / len(attempts),
        "submitted": sum(s["end"] == "submitted" for _, s in attempts),
        "turns_mean": sum(s["turns"] for _, s in attempts) / len(attempts),
    }
    if episodes is None:
        return out
    facts = []
    for t, s in attempts:
        path = Path(episodes) / f"{t['instance_id']}-s{s['sample']}.json"
        ep = json.loads(path.read_text())
        statement = ep["messages"][1]["content"] if len(ep["messages"]) > 1 else ""
        function = re.search(r">>> (\w+)\(", statement)
        facts.append(episode_facts(ep, expected(statement), function[1] if function else "?"))
    checks = [c for f in facts for c in f["checks_after_edit"]]
    wrong = [c for c in checks if not c["right"]]
    out |= {
        "checked_before_first_edit": sum(f["checked_first"] for f in facts),
        "attempts_with_a_check_after_an_edit": sum(bool(f["checks_after_edit"]) for f in facts),
        "checks_after_edit": len(checks),
        "checks_right": len(checks) - len(wrong),
        "after_a_wrong_check": {k: sum(c["next"] == k for c in wrong) for k in _NEXT},
        "after_a_right_check": {
            k: sum(c["next"] == k for c in checks if c["right"]) for k in _NEXT
        },
    }
    return out


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:3]), indent=1))
