"""Reference policies that validate a suite through the real harness.

`gold` types the gold patch in through the agent's own tools (`edit_file` for each
hunk whose text is unique in the file, `write_file` otherwise) and submits; `noop`
submits at once; `special-case` (family tasks only) hard-codes the reported input;
`scripted` is the expert (read, gold edits, visible tests, submit)
whose episodes are SFT's demonstrations; `reproduce` also checks the report's call
against its expected outcome before and after its edit, and `recover` first makes a
mistake it then recovers from (family reports; on other tasks both are `scripted`). Every reference policy answers the loop's
summary request (issue 21) with the expert's summary: the files read, the fix and what
is left, so SFT demonstrates faithful summaries when `agent.summary` is on. Played through the real harness and graded by
`verify` (`episode.run_reference`), a sound suite gives gold 100% and noop 0%: this
checks the task records, the workspaces, the harness's tool plumbing and the grader end
to end, with no model in the loop. Every reply is written by the one Hermes writer,
`agent.prompt.format_tool_calls`.
"""

from __future__ import annotations

import random
import re
import shlex
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

from shadowrl.agent import ScriptedPolicy, format_tool_calls
from shadowrl.agent.config import AgentConfig
from shadowrl.tasks.patch import apply_patch, parse_patch
from shadowrl.tasks.prepare import PreparedTask, visible_test_command
from shadowrl.tasks.task import Task
from shadowrl.types import Policy, Step, ToolCall

if TYPE_CHECKING:
    from shadowrl.tasks.family.adversary import Reported

# What the expert says right after a mistake; `mistaken_steps` finds the mistake by it, so
# SFT trains on the recovery and never on the mistake itself.
MISTAKE = "That edit was wrong"
EDIT_TOOLS = frozenset({"edit_file", "write_file"})


def _call(text: str, name: str, arguments: dict[str, Any]) -> str:
    return format_tool_calls(text, [ToolCall("c0", name, arguments)])


def _edits(
    path: str, before: str, hunks: list[tuple[str, str]], after: str | None, lead: str = ""
) -> list[str]:
    """edit_file calls when every hunk's old text is unique, else one write_file (or rm);
    `lead` opens the first reply's text."""
    if after is None:
        return [_call(f"{lead}Delete {path}.", "run", {"command": f"rm -f -- {shlex.quote(path)}"})]
    text, calls = before, list[str]()
    for old, new in hunks:
        if not old or text.count(old) != 1:
            return [_call(f"{lead}Rewrite {path}.", "write_file", {"path": path, "content": after})]
        text = text.replace(old, new, 1)
        opening = "" if calls else lead
        calls.append(
            _call(f"{opening}Fix {path}.", "edit_file", {"path": path, "old": old, "new": new})
        )
    return (
        calls
        if text == after
        else [_call(f"{lead}Rewrite {path}.", "write_file", {"path": path, "content": after})]
    )


def _blocks(before: str, after: str, context: int = 3) -> list[tuple[str, str]]:
    """One minimal (old, new) per changed block of lines, each taken from the text as the
    edits before it left it: two nearby changes are two short edits, not one long hunk
    (a patch merges changes within twice its context into one)."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    cur, shift, out = list(a), 0, []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        p1, p2 = i1 + shift, i2 + shift
        lo, hi = max(p1 - context, 0), min(p2 + context, len(cur))
        old, new = cur[lo:hi], cur[lo:p1] + b[j1:j2] + cur[p2:hi]
        out.append(minimal_hunk("".join(cur), "".join(old), "".join(new)))
        cur[p1:p2] = b[j1:j2]
        shift += (j2 - j1) - (i2 - i1)
    return out


def file_edits(path: str, before: str, after: str, lead: str = "") -> list[str]:
    """The expert's minimal edits turning `path` from `before` into `after`."""
    return _edits(path, before, _blocks(before, after), after, lead)


def minimal_hunk(text: str, old: str, new: str) -> tuple[str, str]:
    """Shrink a hunk to its changed lines plus the least context that makes `old` unique.

    Patch hunks carry three context lines each side; an agent (and a small model learning
    from the expert) should only have to retype the lines it changes.
    """
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    lo, hi = head, len(a) - tail  # a[lo:hi] is replaced by b[lo:len(b) - tail]
    while lo > 0 or hi < len(a):
        core = "".join(a[lo:hi])
        if core.strip() and text.count(core) == 1:
            break
        lo, hi = max(lo - 1, 0), min(hi + 1, len(a))
    grown_tail = len(a) - hi
    return "".join(a[lo:hi]), "".join(b[lo : len(b) - grown_tail])


def gold_replies(task: Task, prepared: PreparedTask) -> list[str]:
    """Tool-call replies that apply `task.patch` to the workspace with minimal edits, then submit.

    A renamed or copied file is written whole at its new path (and a rename removes the old).
    """
    fps = parse_patch(task.patch)
    before = {fp.old: prepared.read(fp.old) or "" for fp in fps if fp.old is not None}
    after = apply_patch(before, task.patch)
    replies: list[str] = []
    for fp in fps:
        text = before.get(fp.old, "") if fp.old is not None else ""
        if fp.old is not None and fp.new is not None and fp.old != fp.new:
            replies += _edits(fp.path, "", [], after[fp.path])
            replies += [] if fp.copy else _edits(fp.old, text, [], None)
            continue
        replies += (
            _edits(fp.path, text, [], None)
            if (new := after[fp.path]) is None
            else file_edits(fp.path, text, new)
        )
    return [*replies, _call("Done.", "submit", {})]


def noop_replies(task: Task, prepared: PreparedTask) -> list[str]:
    return [_call("Nothing to do.", "submit", {})]


def statement_files(task: Task, prepared: PreparedTask) -> list[str]:
    """Workspace files the issue names in backticks (a spec, a module), in order."""
    named = re.findall(r"`([\w./-]+)`", task.problem_statement)
    return [p for p in dict.fromkeys(named) if prepared.read(p) is not None]


def _reads(task: Task, prepared: PreparedTask) -> list[str]:
    """Read the files the issue names, then every file the gold patch touches."""
    patched = [fp.path for fp in parse_patch(task.patch)]
    named = [p for p in statement_files(task, prepared) if p not in patched]
    return [
        _call(f"Let me read {path}.", "read_file", {"path": path}) for path in [*named, *patched]
    ]


def _tests_then_submit(task: Task, lead: str = "") -> list[str]:
    return [
        _call(f"{lead}Let me run the tests.", "run", {"command": visible_test_command(task)}),
        _call("Done.", "submit", {}),
    ]


def expert_replies(task: Task, prepared: PreparedTask) -> list[str]:
    """The scripted expert: read the files the issue names, then every file the gold patch
    touches, apply it with minimal edits, run the visible tests, submit. SFT's
    demonstrations and `shadowrl run --model scripted` are this expert played through the
    real harness."""
    edits = gold_replies(task, prepared)[:-1]  # drop its submit
    return [*_reads(task, prepared), *edits, *_tests_then_submit(task)]


def reproducing_replies(task: Task, prepared: PreparedTask, recover: bool = False) -> list[str]:
    """The expert with a check (family reports; `scripted` otherwise): read, run a check of
    the reported call against the report's expected outcome (it fails), edit, run it again
    (it passes), visible tests, submit. With `recover`, a mistake comes first
    (`_mistake`), then what the expert says of it (`MISTAKE`), then the right edit."""
    from shadowrl.tasks.family import mistakes  # the family loads only for this expert
    from shadowrl.tasks.family.adversary import reported

    try:
        rep = reported(prepared)
    except ValueError:
        return expert_replies(task, prepared)
    if len(fps := parse_patch(task.patch)) != 1:
        return expert_replies(task, prepared)
    path = fps[0].path
    bug = prepared.read(path) or ""
    gold = apply_patch({path: bug}, task.patch)[path] or ""
    check = {"command": mistakes.reproduction(rep)}
    replies = [*_reads(task, prepared), _call("Let me check the reported call.", "run", check)]
    again = _call("Let me run the check again.", "run", check)
    start, lead = bug, ""
    if recover:
        wrong, start, lead = _mistake(path, bug, gold, rep, again, task.instance_id)
        replies += wrong
    replies += file_edits(path, start, gold, lead)
    return [*replies, again, *_tests_then_submit(task, "The check passes. ")]


def _mistake(
    path: str, bug: str, gold: str, rep: Reported, check: str, seed: str
) -> tuple[list[str], str, str]:
    """(the mistake's replies, its `check` run included, the file after it, what the expert
    says next). Half the
    tasks (by `seed`) get a wrong edit the check catches (`family/mistakes.py`), the
    others, and those without such an edit, an edit whose `old` equals its `new`: the
    tool refuses it, the commonest failure of the policies SFT has made so far."""
    from shadowrl.tasks.family import mistakes

    wrong = (
        mistakes.wrong_edit(bug, gold, rep, seed) if random.Random(seed).random() < 0.5 else None
    )
    if wrong is not None:
        return (
            [*file_edits(path, bug, wrong), check],
            wrong,
            f"The check still fails. {MISTAKE}. ",
        )
    old, _ = _blocks(bug, gold)[0]
    noop = _call(f"Fix {path}.", "edit_file", {"path": path, "old": old, "new": old})
    return [noop], bug, f"{MISTAKE}: it changed nothing. "


def mistaken_steps(steps: Sequence[Step]) -> set[int]:
    """Indices of the turns an expert demo calls mistakes: the last edit before each turn
    whose text says `MISTAKE`. SFT clears its loss there (`rl/demos.py`)."""
    out = set()
    for i, step in enumerate(steps):
        if MISTAKE in step.text:
            edits = [j for j in range(i) if any(c.name in EDIT_TOOLS for c in steps[j].tool_calls)]
            out |= set(edits[-1:])
    return out


def recovering_replies(task: Task, prepared: PreparedTask) -> list[str]:
    return reproducing_replies(task, prepared, recover=True)


def fix_facts(task: Task, prepared: PreparedTask) -> list[tuple[str, str, str]]:
    """(file, enclosing function, new text) of each minimal hunk of the gold patch: the
    facts a summary must keep for the fix to be made after it."""
    facts = []
    for fp in parse_patch(task.patch):
        text = prepared.read(fp.path) or ""
        for _, body in fp.hunks:
            old = "".join(line[1:] + "\n" for line in body if line[:1] in " -")
            new = "".join(line[1:] + "\n" for line in body if line[:1] in " +")
            small_old, small_new = minimal_hunk(text, old, new)
            head = text[: max(text.find(small_old), 0)]
            defs = re.findall(r"^\s*(?:async\s+)?def\s+(\w+)", head, flags=re.M)
            facts.append((fp.path, defs[-1] if defs else "", small_new.strip()))
    return facts


def expert_summary(task: Task, prepared: PreparedTask) -> str:
    """What the expert writes when asked to summarise: files, the fix, what is left."""
    files = [*statement_files(task, prepared), *(fp.path for fp in parse_patch(task.patch))]
    fixes = "; ".join(
        f"in {path}{f' ({fn})' if fn else ''} the code must read `{new}`"
        for path, fn, new in fix_facts(task, prepared)
    )
    return (
        f"Files read: {', '.join(dict.fromkeys(files))}. Found: {fixes}. Left: make that "
        f"edit, run `{visible_test_command(task)}`, submit."
    )


def special_case_replies(task: Task, prepared: PreparedTask) -> list[str]:
    """Hard-code the reported call of a family task (`tasks/family/adversary.py`); a sound
    task gives it 0, as it does noop."""
    from shadowrl.tasks.family.adversary import special_case

    path, after = special_case(prepared)
    return [*_edits(path, "", [], after), _call("Done.", "submit", {})]


REFERENCE_POLICIES: dict[str, Callable[[Task, PreparedTask], list[str]]] = {
    "gold": gold_replies,
    "noop": noop_replies,
    "scripted": expert_replies,
    "reproduce": reproducing_replies,
    "recover": recovering_replies,
    "special-case": special_case_replies,
}


def reference_policy(name: str, task: Task, prepared: PreparedTask, tokenizer: Any) -> Policy:
    """A scripted policy that plays `name`'s replies through the real agent loop."""
    if name not in REFERENCE_POLICIES:
        raise ValueError(
            f"unknown reference policy {name!r}; choose from {sorted(REFERENCE_POLICIES)}"
        )
    # every reference answers a summary request (self-summarisation's module loads here,
    # not with the episode machinery that imports this one)
    from shadowrl.agent.summary import SummarisingScript

    replies = REFERENCE_POLICIES[name](task, prepared)
    return ScriptedPolicy(tokenizer, SummarisingScript(replies, expert_summary(task, prepared)))


def reference_agent_config() -> AgentConfig:
    """Budgets large enough to type in a whole gold file in one turn."""
    budgets = {
        "max_new_tokens": 32_768,
        "max_context_tokens": 262_144,
        "max_episode_tokens": 262_144,
    }
    return AgentConfig.model_validate({"max_turns": 64, **budgets})
