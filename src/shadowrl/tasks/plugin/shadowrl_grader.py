"""The grader's pytest plugin: each test id's outcome, recorded the moment pytest reports it.

`tasks/runner.py` loads this module with `-p shadowrl_grader` from its own directory,
which is outside the workspace and on PYTHONPATH for the pytest process only, and
names a fresh file under a random nonce directory with `--shadowrl-outcomes`. The
file is created exclusively (one the agent planted makes the run fail) and gets one
JSON line per event, flushed at once, so a run that dies half-way still leaves what
it did:

    {"nodeid": ..., "when": "setup"|"call"|"teardown", "outcome": "passed"|"failed"|"skipped"}
    {"collect_error": <nodeid of the collector>}
    {"exitstatus": <int>}                       (last: pytest finished its session)

Node ids are pytest's own, so no mapping (JUnit class names, rootdir-relative file
names) can lose or confuse one. Outcomes are written from `pytest_runtest_logreport`
with `tryfirst=True`: that is the first moment a phase's report is final (every
`pytest_runtest_makereport` implementation has run) and it comes before any other
`logreport` implementation (the terminal reporter, junitxml, a conftest hook) sees
or could alter it. Test files and conftests are restored to pristine before grading
(`tasks/verify.py`), so a `makereport` wrapper of the agent's never runs here.

It imports only the standard library and pytest: it runs in the task's env, not ours.
"""

from __future__ import annotations

import json
from typing import IO, Any

import pytest

OPTION = "--shadowrl-outcomes"


class Recorder:
    """Appends one JSON line per report to the outcome file."""

    def __init__(self, path: str) -> None:
        self._file: IO[str] = open(path, "x", encoding="utf-8")  # noqa: SIM115  (open for the run)

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._write({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome})

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._write({"collect_error": report.nodeid})

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self._write({"exitstatus": int(exitstatus)})
        self._file.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, default=None, help="file the grader reads each test's outcome from")


# Guards against project code (issue 18's audit hook) belong in a tryfirst
# `pytest_load_initial_conftests` here: a `-p` plugin gets it before any conftest is
# imported, the earliest point pytest offers; they may check what `Recorder` wrote first.


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption(OPTION)
    if path:
        config.pluginmanager.register(Recorder(path), "shadowrl-grader-recorder")
