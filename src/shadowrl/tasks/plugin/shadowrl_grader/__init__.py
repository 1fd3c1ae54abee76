"""The grader's pytest plugin: each test id's outcome, recorded the moment pytest reports it.

`tasks/runner.py` loads this package with `-p shadowrl_grader` from its own directory,
which is outside the workspace and on PYTHONPATH for the pytest process only, and
names a fresh file under a random nonce directory with `--shadowrl-outcomes`, with the
run's key in `key` beside it (`records.py`: every line is signed, the key is read and
deleted before any workspace module is imported). The file is created exclusively (one
the agent planted makes the run fail) and gets one record per event, flushed at once,
so a run that dies half-way still leaves what it did:

    {"nodeid": ..., "when": "setup"|"call"|"teardown", "outcome": "passed"|"failed"|"skipped"}
                                                (a call's also has "body": whether any test
                                                 code ran since the setup's report)
    {"collect_error": <nodeid of the collector>}
    {"exitstatus": <int>}                       (pytest finished its session)
    {"tamper": <why>}                           (the guard caught something: the run is void)

Node ids are pytest's own, so no mapping (JUnit class names, rootdir-relative file
names) can lose or confuse one. Outcomes are written from `pytest_runtest_logreport`
with `tryfirst=True`: that is the first moment a phase's report is final (every
`pytest_runtest_makereport` implementation has run) and it comes before any other
`logreport` implementation (the terminal reporter, junitxml, a conftest hook) sees
or could alter it. Test files and conftests are restored to pristine before grading
(`tasks/verify.py`), so a `makereport` wrapper of the agent's never runs here.

The guard (issue 18, layer 2; `tasks/README.md` has the whole picture), installed in a
tryfirst `pytest_load_initial_conftests` (which a `-p` plugin gets before any conftest,
so before any workspace module is imported): the audit hook of `guard.py`, which also
owns the outcome file and all the guard's state, and the profile function of `watch.py`
(comparisons decided by the agent's dunders, hard exits, approx, hook calls). The
`Recorder` only hands reports to the hook, which checks where each came from and, at
session end, that nothing rewrote the framework and that its failure count is
`session.testsfailed`; a difference is tampering. A task may allow primitives its gold
patch needs (`--shadowrl-allow`, the layer-1 rule names of `Task.allowed_primitives`).

It imports only the standard library and pytest: it runs in the task's env, not ours.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

import pytest

from .guard import RECORD, Places, make_hook
from .records import Sink, load_key
from .watch import make_watch

OPTION = "--shadowrl-outcomes"
ALLOW_OPTION = "--shadowrl-allow"
BLAME_OPTION = "--shadowrl-blame"
UNWATCHED_OPTION = "--shadowrl-unwatched"  # `runner.UNWATCHED_OPTION`


class Recorder:
    """Hands each report to the audit hook, which records its outcome and, at the session's
    end, checks that nothing rewrote the framework. It keeps no state: what the hook checks
    against lives in the hook's closure, out of the code under test's reach."""

    @staticmethod
    def _emit(record: dict[str, Any], about: object = None) -> None:
        """The one way an outcome reaches the file: the audit hook signs what this code asks."""
        sys.audit(RECORD, record, about)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._emit({"nodeid": report.nodeid}, report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._emit({"collect_error": report.nodeid})

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self._emit({"exitstatus": int(exitstatus)}, session)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, default=None, help="file the grader reads each test's outcome from")
    parser.addoption(ALLOW_OPTION, default="", help="comma-separated layer-1 rules the task allows")
    parser.addoption(
        BLAME_OPTION, default=None, help="JSON {file: [[first, last] line]} the guard blames"
    )
    parser.addoption(
        UNWATCHED_OPTION, action="store_true", help="the generator's own code: no profile function"
    )


class CallCount:
    """An unwatched run's evidence that a call phase ran: pytest called the item. Only the
    generator's own code runs there (suite validation, canary plans), so nothing could skip
    a body this count would miss; an episode's run is always watched."""

    def __init__(self, bodies: list[int]) -> None:
        self._bodies = bodies

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self) -> None:
        self._bodies[0] += 1


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Read the key, open the outcome file and install the guard before any conftest (so
    any workspace module) is imported."""
    ns = early_config.known_args_namespace
    path = getattr(ns, "shadowrl_outcomes", None)
    if not path:
        return
    sink = Sink(path, load_key(path))
    allowed = frozenset(filter(None, str(getattr(ns, "shadowrl_allow", "")).split(",")))
    blame_arg = getattr(ns, "shadowrl_blame", None)
    blame = None if blame_arg is None else dict(json.loads(blame_arg))
    # Two of them: the watch's is reachable (`sys.getprofile()`), the hook's is not.
    places, watch_places = (Places(os.getcwd(), path, blame) for _ in range(2))
    bodies = [0]  # test code entered so far (the watch counts, the hook reads at each report)
    unwatched = bool(getattr(ns, "shadowrl_unwatched", False))
    watch = None if unwatched else make_watch(watch_places, allowed, bodies)
    emitters = {Recorder._emit.__code__}
    sys.addaudithook(make_hook(places, sink, allowed, emitters, watch, watch_places, bodies))
    if watch is None:
        early_config.pluginmanager.register(CallCount(bodies), "shadowrl-grader-calls")
        return
    threading.setprofile(watch)
    sys.setprofile(watch)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption(OPTION, None):
        config.pluginmanager.register(Recorder(), "shadowrl-grader-recorder")
