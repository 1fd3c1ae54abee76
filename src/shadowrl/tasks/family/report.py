"""The bug report a user would write: one failing call, what it did, what it should do.

Every report holds the call as a `>>>` line, the way people paste a session, and
states the expected result; the wording varies so a policy cannot key on one phrasing.
The report never names a test, a line or the kind of bug.
"""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Case, Outcome

OPENINGS = (
    "I think there is a bug in `{file}`.",
    "`{fn}` gives me the wrong answer.",
    "Something is off with `{fn}` in `{file}`.",
    "Found a problem while using `{file}`:",
    "Hi, `{fn}` does not behave the way its docstring says.",
)
CLOSINGS = (
    "Other inputs may be affected too.",
    "Could you take a look?",
    "I only checked this one input, but I doubt it is the only one.",
    "",
)


def _did(outcome: Outcome) -> str:
    return f"raises `{outcome.raises}`" if outcome.raises else f"returns `{outcome.value}`"


def _should(outcome: Outcome) -> str:
    return f"raise `{outcome.raises}`" if outcome.raises else f"return `{outcome.value}`"


def statement(module: str, reported: Case, got: Outcome, rng: random.Random) -> str:
    """The issue text of one instance."""
    fn, file = reported.call[0], f"{module}.py"
    session = f">>> from {module} import {fn}\n>>> {reported.text}\n"
    session += (
        f"Traceback (most recent call last):\n  ...\n{got.raises}\n"
        if got.raises
        else got.value + "\n"
    )
    lines = [
        rng.choice(OPENINGS).format(fn=fn, file=file),
        "",
        f"```python\n{session}```",
        "",
        f"It {_did(got)}, but it should {_should(reported.expected)}. {rng.choice(CLOSINGS)}",
    ]
    return "\n".join(lines).strip()
