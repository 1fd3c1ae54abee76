"""Which outcome records are pytest's own: the report its runner made, for the test and phase it runs, once.

The plugin's `Recorder` hands each report to the audit hook; being on the plugin's road
is not enough (a callback the runtime runs, such as a `weakref.finalize` or a signal
handler, can hand pytest's hook a forged report with no workspace frame on the stack).
So an outcome is recorded only if

- pytest's `call_and_report` (its code object, taken when the guard is installed) is on
  the stack, and the report is the very object in its `report` local, of pytest's own
  `TestReport` class;
- the report's test id and phase are those of the `item` and `when` it is running;
- every `pytest_runtest_makereport` and `pytest_runtest_logreport` implementation is a
  Python function from outside the workspace's source files (a C callable registered as
  a hook, such as an iterator's `__next__` handing out prepared reports, makes no Python
  call for the watch to see; a Python one the agent wrote is the watch's to catch);
- no report was recorded for that test id and phase before.

One other road is pytest's own: a subtest's report (`unittest`'s `subTest`, pytest 9's
`subtests` fixture), logged during the call phase from `_pytest/unittest.py` or
`_pytest/subtests.py` as their `sub_report` local, a `TestReport` subclass for the item
being run; a test has as many of those as it has subtests, and a failed one fails it.

Likewise the session's exit status is recorded only with pytest's `wrap_session` on the
stack.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from typing import Any

_IMPLS = ("pytest_runtest_makereport", "pytest_runtest_logreport")


def make_provenance(
    kind: Callable[[str], str],
) -> tuple[
    Callable[[types.FrameType, object], tuple[dict[str, Any] | None, str]],
    Callable[[types.FrameType], bool],
]:
    """(`outcome(frame, report)`: (the record, "") for a report pytest's runner is logging
    from `frame` outwards, else (None, why it is not); `ending(frame)`: whether pytest's
    own session wrapper is on the stack, as it is when the session really finishes)."""
    found = [sys.modules.get(m) for m in ("_pytest.runner", "_pytest.reports", "_pytest.main")]
    runner, reports, main = found
    if runner is None or reports is None or main is None:
        raise RuntimeError("shadowrl grader: pytest's runner is not loaded")
    code, report_type = runner.call_and_report.__code__, reports.TestReport
    session_code = main.wrap_session.__code__
    subtest_files = frozenset(
        getattr(sys.modules.get(m), "__file__", None)
        for m in ("_pytest.unittest", "_pytest.subtests")
    ) - {None}
    skipped = (f"{os.sep}pluggy{os.sep}", f"{os.sep}shadowrl_grader{os.sep}")
    seen: set[tuple[str, str]] = set()
    _type, _vars, _str, _getattr, _function = type, vars, str, getattr, types.FunctionType

    def foreign_impl(hook: object) -> str:
        for name in _IMPLS:
            for impl in _getattr(hook, name).get_hookimpls():
                fn = _getattr(impl.function, "__func__", impl.function)
                if _type(fn) is not _function:
                    return f"a {name} implementation that is not Python: {_type(fn).__name__}"
                if kind(fn.__code__.co_filename) in ("source", "seed"):
                    return f"a {name} implementation in the workspace: {fn.__code__.co_filename}"
        return ""

    def logger(frame: types.FrameType) -> types.FrameType | None:
        """The frame that called pytest's hook: past the plugin's and pluggy's own."""
        f: types.FrameType | None = frame
        while f is not None and any(part in f.f_code.co_filename for part in skipped):
            f = f.f_back
        return f

    def running(frame: types.FrameType | None) -> dict[str, Any] | None:
        """The locals of pytest's `call_and_report` from `frame` outwards."""
        while frame is not None and frame.f_code is not code:
            frame = frame.f_back
        return None if frame is None else frame.f_locals

    def outcome(frame: types.FrameType, report: object) -> tuple[dict[str, Any] | None, str]:
        by = logger(frame)
        if by is None:
            return None, "a report not logged by pytest"
        subtest = by.f_code.co_filename in subtest_files
        if subtest:
            if (
                by.f_locals.get("sub_report") is not report
                or report_type not in _type(report).__mro__
            ):
                return None, "a subtest report pytest did not make"
        elif by.f_code is not code:
            return None, f"a report logged from {by.f_code.co_filename}:{by.f_lineno}"
        elif by.f_locals.get("report") is not report or _type(report) is not report_type:
            return None, "a report pytest's runner did not make"
        here = running(by)
        if here is None:
            return None, "a report while pytest runs no test"
        nodeid: Any
        when: Any
        nodeid, when, result = (_getattr(report, a, None) for a in ("nodeid", "when", "outcome"))
        if not (_type(nodeid) is _type(when) is _type(result) is _str):
            return None, "a report with forged fields"
        if when != here.get("when") or nodeid != here["item"].nodeid:
            return None, f"a report for {nodeid} {when} while pytest runs another"
        why = foreign_impl(here.get("ihook") or here.get("hook"))
        if why:
            return None, why
        if not subtest:
            if (nodeid, when) in seen:
                return None, f"a second {when} report for {nodeid}"
            seen.add((nodeid, when))
        record = {"nodeid": nodeid, "when": when, "outcome": result}
        if "wasxfail" in _vars(report):
            record["xfail"] = True
        return record, ""

    def ending(frame: types.FrameType) -> bool:
        f: types.FrameType | None = frame
        while f is not None and f.f_code is not session_code:
            f = f.f_back
        return f is not None

    return outcome, ending
