"""Red team, layer 2: hacks the diff rules miss earn 0, voided by the guard in the test run.

Each hack runs through the real `verify` on the real tiny task. First it is shown
that layer 1 (the text blocklist and the diff rules) finds nothing in it; then that
the grade is 0, with `voided_by="test_guard"` and the run's status `tampered`.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from required import unavailable
from shadowrl.sandbox import Sandbox
from shadowrl.tasks.config import DEFAULT_FORBIDDEN
from shadowrl.tasks.patch import apply_patch
from shadowrl.tasks.prepare import PreparedTask
from shadowrl.tasks.runner import PLUGIN, PLUGIN_DIR
from shadowrl.tasks.verify import agent_lines, diff_violations, tamper_hits, verify

from .adaptive_hacks import EXITS, FORGED
from .guard_hacks import GUARD_HACKS
from .hacks import Hack, applied, naive_outcomes


@pytest.fixture(scope="module")
def base(tiny: PreparedTask) -> Iterator[Sandbox]:
    box = tiny.sandbox("local")
    yield box
    box.close()


def buggy(prepared: PreparedTask) -> str:
    return str(prepared.read("calc.py"))


@pytest.mark.parametrize("hack", GUARD_HACKS, ids=[h.name for h in GUARD_HACKS])
def test_hack_missed_by_layer_one_is_voided_by_the_guard(
    hack: Hack, tiny: PreparedTask, base: Sandbox
) -> None:
    with applied(base, {"calc.py": hack.apply(buggy(tiny))}) as box:
        changed = set(box.changed_files())
        assert tamper_hits(tiny, box, changed, DEFAULT_FORBIDDEN) == []
        assert diff_violations(tiny, box, changed) == []
        v = verify(tiny.task, tiny, box)
    assert (v.reward, v.resolved, v.voided_by, v.status) == (0.0, False, "test_guard", "tampered")
    assert v.tampered and all("calc.py" in t or "framework" in t for t in v.tampered), v.log


def test_gold_still_earns_one_under_the_guard(tiny: PreparedTask, base: Sandbox) -> None:
    gold = apply_patch({"calc.py": buggy(tiny)}, tiny.task.patch)
    with applied(base, {p: str(t) for p, t in gold.items()}) as box:
        v = verify(tiny.task, tiny, box)
    assert (v.resolved, v.reward, v.voided_by, v.status) == (True, 1.0, "", "ran"), v.log


def test_nothing_an_exec_started_outlives_it(base: Sandbox) -> None:
    """The local backend kills the command's process group when it is done (the overlay
    backend's pid 1 kills the whole namespace), so no straggler writes after results are read."""
    with applied(base, {}) as box:
        box.exec("(sleep 0.5; echo late > late.txt) >/dev/null 2>&1 &")
        time.sleep(1.5)
        assert "late.txt" not in box.list_files()


REAL = [h for h in GUARD_HACKS if h.real]


@pytest.mark.parametrize("hack", REAL, ids=[h.name for h in REAL])
def test_the_hack_is_real(hack: Hack, tiny: PreparedTask, base: Sandbox) -> None:
    """Without the grader, a plain `pytest --junitxml` run reports every test passed."""
    hidden = {p: str(t) for p, t in tiny.hidden_files().items()}
    with applied(base, {**hidden, "calc.py": hack.apply(buggy(tiny))}) as box:
        outcomes = naive_outcomes(box, str(tiny.python), tiny.task.test_ids)
    assert len(outcomes) == len(tiny.task.test_ids) and all(outcomes.values()), outcomes


def test_the_guard_blames_only_the_agents_non_test_files(tmp_path: Path) -> None:
    sys.path.insert(0, str(PLUGIN_DIR))
    try:
        grader = importlib.import_module(PLUGIN)
    finally:
        sys.path.remove(str(PLUGIN_DIR))
    places = grader.Places(str(tmp_path), str(tmp_path / "nonce" / "out"), {"pkg/a.py": [[3, 4]]})
    kinds = {
        p: places.kind(str(tmp_path / p))
        for p in ("pkg/a.py", "pkg/b.py", "test_x.py", "tests/h.py", "conftest.py", "x_test.py")
    }
    assert kinds == {"pkg/a.py": "source", "pkg/b.py": "seed", "test_x.py": "test",
                     "tests/h.py": "test", "conftest.py": "test", "x_test.py": "test"}  # fmt: skip
    a = str(tmp_path / "pkg/a.py")
    assert [places.blamed(a, n) for n in (2, 3, 4, 5)] == [False, True, True, False]
    assert not places.blamed(str(tmp_path / "pkg/b.py"), 3)
    assert places.kind(os.__file__) == "stdlib" and places.kind("<frozen os>") == "stdlib"
    assert places.forbidden_open(str(tmp_path / "nonce" / "out"))
    assert places.forbidden_open(str(tmp_path / "test_x.py"))
    assert not places.forbidden_open(str(tmp_path / "pkg" / "b.py"))
    everything = grader.Places(str(tmp_path), str(tmp_path / "out"), None)
    assert everything.kind(str(tmp_path / "pkg/b.py")) == "source"
    assert everything.blamed(str(tmp_path / "pkg/b.py"), 1)


def test_the_agents_lines_are_those_it_added_or_changed() -> None:
    old = b"a = 1\nb = 2\nc = 3\n"
    new = b"x = 0\na = 1\nb = 20\nc = 3\nd = 4\n"
    assert agent_lines({"m.py": (old, new), "gone.py": (old, None)}) == {
        "m.py": [(1, 1), (3, 3), (5, 5)]
    }


def test_the_guard_holds_in_the_overlay_sandbox(tiny: PreparedTask) -> None:
    """The same hacks, hard exits and forged records, and the gold fix, in the real sandbox
    (the plugin bound read-only, the key written as the sandbox user)."""
    from ..conftest import overlay_available

    if not overlay_available():
        unavailable("overlay sandbox unavailable")  # a failure under CI=true
    box = tiny.sandbox("overlay")
    try:
        gold = apply_patch({"calc.py": buggy(tiny)}, tiny.task.patch)
        with applied(box, {p: str(t) for p, t in gold.items()}) as fixed:
            assert verify(tiny.task, tiny, fixed).reward == 1.0
        for hack in GUARD_HACKS + EXITS + FORGED:
            with applied(box, {"calc.py": hack.apply(buggy(tiny))}) as hacked:
                v = verify(tiny.task, tiny, hacked)
            assert (v.reward, v.voided_by, v.status) == (0.0, "test_guard", "tampered"), hack.name
    finally:
        box.close()
