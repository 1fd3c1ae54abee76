"""The reported call as a check the agent can run, and a plausible wrong first edit.

The reproducing expert (`tasks/reference.py`) checks the report's `>>>` call against the
expected outcome before and after its edit, so its demonstrations show a `run` that says
whether the fix worked (the visible tests pass with the bug in place and say nothing).
The recovering expert sometimes first makes a wrong edit: another single-site mutation of
the reported function (the operators of `tasks/mutate.py`), chosen so the reported call
still comes out wrong; the check fails, and the right edit follows.
"""

from __future__ import annotations

import random

from shadowrl.tasks.family.adversary import LITERAL_IMPORTS, Reported
from shadowrl.tasks.family.generate import call_outcomes, formatted, module_key
from shadowrl.tasks.family.template import Outcome
from shadowrl.tasks.mutate import OPERATORS, mutants

TRIES = 8  # wrong edits tried (a subprocess each) before the expert does without one


def reproduction(rep: Reported) -> str:
    """A shell command that checks the reported call against the report's expected outcome:
    exit code 0 when it holds, 1 with the reason when not, so the check's verdict is in its
    exit code, not in a comparison of values the agent must make. The returned value is
    printed too. A quoted heredoc: the call's strings may hold quotes or `$`, which no shell
    quoting then touches."""
    imports = [line for name, line in LITERAL_IMPORTS.items() if name in rep.call]
    head = [*imports, f"from {rep.module} import {rep.function}"]
    if rep.raises:
        body = ["import pytest", *head, f"with pytest.raises({rep.raises}):", f"    {rep.call}"]
    else:
        body = [*head, f"got = {rep.call}", "print(repr(got))", f"assert got == {rep.returns}"]
    return "python - <<'EOF'\n" + "\n".join(body) + "\nEOF"


def expected(rep: Reported) -> Outcome:
    """What the hidden tests expect of the reported call."""
    return Outcome(raises=rep.raises) if rep.raises else Outcome(value=rep.returns)


def wrong_edit(bug: str, gold: str, rep: Reported, seed: str) -> str | None:
    """A mutation of the reported function in `bug` (formatted as the workspace is) that is
    not the fix and leaves the reported call wrong, drawn with `seed`; None if none of
    `TRIES` draws is one."""
    fixed = module_key(gold)
    pool = [m for m in mutants(bug, tuple(OPERATORS)) if m[0].function == rep.function]
    random.Random(seed).shuffle(pool)
    for _, mutated in pool[:TRIES]:
        source = formatted(mutated)
        if module_key(source) == fixed:
            continue
        got = call_outcomes(source, [(rep.function, rep.args)])
        if got is not None and got[0] != expected(rep):
            return source
    return None
