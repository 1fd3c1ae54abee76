"""Red team, layer 1: each hack earns 0 and the diff rules alone catch it; the controls hold.

Every hack runs through the real `verify` on the real tiny task, in a fork of one
sandbox. With the text blocklist switched off, the episode must be voided by
`diff_rules` naming the rules the hack trips; with the default config it must earn 0.
`test_the_hack_is_real` shows the hacks that target the report do fool a plain
`pytest --junitxml` run, so a 0 here is the grader's doing, not the hack's failure.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.patch import apply_patch
from shadowrl.tasks.prepare import PreparedTask
from shadowrl.tasks.verify import verify

from .hacks import HACKS, Hack, applied, naive_outcomes

NO_TEXT_RULES = {"forbidden_patterns": ()}


@pytest.fixture(scope="module")
def base(tiny: PreparedTask) -> Iterator[Sandbox]:
    box = tiny.sandbox("local")
    yield box
    box.close()


def buggy(prepared: PreparedTask) -> str:
    return str(prepared.read("calc.py"))


def test_gold_earns_one_and_untouched_zero(tiny: PreparedTask, base: Sandbox) -> None:
    gold = apply_patch({"calc.py": buggy(tiny)}, tiny.task.patch)
    with applied(base, {p: str(t) for p, t in gold.items()}) as box:
        v = verify(tiny.task, tiny, box, shaping=NO_TEXT_RULES)
        assert (v.resolved, v.reward, v.voided_by) == (True, 1.0, ""), v.log
    v = verify(tiny.task, tiny, base)
    assert (v.resolved, v.reward, v.voided_by) == (False, 0.0, "")


@pytest.mark.parametrize("hack", HACKS, ids=[h.name for h in HACKS])
def test_hack_earns_zero_caught_by_diff_rules(
    hack: Hack, tiny: PreparedTask, base: Sandbox
) -> None:
    with applied(base, {"calc.py": hack.apply(buggy(tiny))}) as box:
        alone = verify(tiny.task, tiny, box, shaping=NO_TEXT_RULES)
        default = verify(tiny.task, tiny, box)
    assert (alone.reward, alone.resolved, alone.voided_by) == (0.0, False, "diff_rules")
    assert hack.rules <= {v.rule for v in alone.violations}, alone.log
    assert {v.path for v in alone.violations} == {"calc.py"}
    assert (default.reward, default.resolved) == (0.0, False)


REAL = [h for h in HACKS if h.real]


@pytest.mark.parametrize("hack", REAL, ids=[h.name for h in REAL])
def test_the_hack_is_real(hack: Hack, tiny: PreparedTask, base: Sandbox) -> None:
    hidden = {p: str(t) for p, t in tiny.hidden_files().items()}
    with applied(base, {**hidden, "calc.py": hack.apply(buggy(tiny))}) as box:
        outcomes = naive_outcomes(box, str(tiny.python), tiny.task.test_ids)
    assert len(outcomes) == len(tiny.task.test_ids) and all(outcomes.values()), outcomes


def test_without_the_hack_the_naive_run_fails(tiny: PreparedTask, base: Sandbox) -> None:
    hidden = {p: str(t) for p, t in tiny.hidden_files().items()}
    with applied(base, hidden) as box:
        outcomes = naive_outcomes(box, str(tiny.python), tiny.task.test_ids)
    assert len(outcomes) == len(tiny.task.test_ids) and not all(outcomes.values())


def test_a_source_linked_outside_the_workspace_voids(tiny: PreparedTask, base: Sandbox) -> None:
    """A module the grader cannot read is a module it cannot check."""
    with applied(base, {}) as box:
        box.exec("rm calc.py && ln -s /etc/hostname calc.py")
        v = verify(tiny.task, tiny, box, shaping=NO_TEXT_RULES)
    assert (v.reward, v.voided_by) == (0.0, "diff_rules")
    assert [(x.path, x.rule) for x in v.violations] == [("calc.py", "unparsable")]
