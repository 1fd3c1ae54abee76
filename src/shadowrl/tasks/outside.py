"""Values compared outside the test interpreter, for function-level tasks (issue 33).

Where a hidden test only calls the code under test on literal arguments and compares
the answer with a literal (a HumanEval-style `check(candidate)`, the family's generated
`test_*` functions: `outsideplan.py` reads them), nothing in those assertions needs the
test interpreter. A driver run in a fresh interpreter of a fork of the final state
imports each function and calls it on each argument text, holding neither the tests nor
the expected values (the hidden files are not written into that fork). The answers come
back as tagged JSON of exact types (builtins, and `datetime.date`, `datetime.datetime`
without a timezone, `datetime.timedelta`, `decimal.Decimal`), decoded strictly here
(`decode`: no `pickle`, `marshal` or `eval`); a subclass, any other type, an exception
(unless the test expects that builtin exception), an answer that does not decode or a
missing answer is a failure. The comparison is made in the grader's own process, on
values it built itself (`mismatches`).

So for these assertions the verdict rests on nothing the agent's code can reach: to be
paid it must return the right values, in a process where the only way to know them is
to compute them. Assertions of other shapes are left to the test run and the canaries.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import re
import shlex

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.outsideplan import Check, OutsidePlan, outside_plan
from shadowrl.tasks.prepare import PreparedTask
from shadowrl.tasks.workspace import freeze, thaw

_INT = re.compile(r"-?\d{1,4300}")
_DECIMAL = re.compile(
    r"-?(\d{1,4300}(\.\d{0,4300})?|\.\d{1,4300})(E[+-]?\d{1,18})?|-?(Infinity|NaN\d{0,100})"
)
_DATES = {"date": (datetime.date, 3), "datetime": (datetime.datetime, 7),
          "timedelta": (datetime.timedelta, 3)}  # fmt: skip
_DEPTH = 64  # nesting an honest answer stays under; deeper is refused, not recursed into
_MAX_OUTPUT = 16 << 20  # bytes of driver output read
# Run with `python -P -c DRIVER calls.json nonce` in the workspace, `calls.json` a list of
# [module, function, argument tuple's text]: one line, `nonce` and the JSON list of answers,
# after every call. An exception is an answer too: its name and the builtin classes it is
# an instance of (what `pytest.raises(<builtin>)` accepts).
DRIVER = """
import builtins, datetime, decimal, importlib, json, os, sys
sys.path.insert(0, os.getcwd())
path, nonce = sys.argv[1:3]
D, DT, TD, DEC = datetime.date, datetime.datetime, datetime.timedelta, decimal.Decimal
def enc(v, d=0):
    t = type(v)
    if d > 64:
        raise ValueError("too deep")
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return ["int", str(v)]
    if t is float:
        return ["float", v.hex()]
    if t in (list, tuple, set, frozenset):
        return [t.__name__, [enc(x, d + 1) for x in v]]
    if t is dict:
        return ["dict", [[enc(k, d + 1), enc(x, d + 1)] for k, x in v.items()]]
    if t is D:
        return ["date", [v.year, v.month, v.day]]
    if t is DT and v.tzinfo is None:
        return ["datetime", [v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond]]
    if t is TD:
        return ["timedelta", [v.days, v.seconds, v.microseconds]]
    if t is DEC:
        return ["decimal", str(v)]
    raise TypeError(t.__name__)
def kinds(e):
    return [c.__name__ for c in type(e).__mro__ if getattr(builtins, c.__name__, None) is c]
with open(path) as f:
    calls = json.load(f)
names = {"__builtins__": {}, "datetime": datetime, "Decimal": DEC}
args = [eval(text, dict(names)) for _, _, text in calls]
out = []
for (module, name, _), a in zip(calls, args):
    try:
        out.append(["ok", enc(getattr(importlib.import_module(module), name)(*a))])
    except BaseException as e:
        out.append(["error", type(e).__name__, kinds(e)])
print(nonce + json.dumps(out), flush=True)
"""


def task_plan(prepared: PreparedTask) -> OutsidePlan | None:
    """Layer 5's checks of a task (None: none): its hidden test files' and, for a family
    task, its visible test files' too. The family generates both alike, and the grader
    restores the visible ones before every run, so with them read a family task's checks
    can cover every one of its test ids (`OutsidePlan.covers`), which spares the canaries."""
    files = prepared.hidden_files()
    family = prepared.task.tier == "family"  # its generated tests import from the root
    if family:
        visible = {i.split("::", 1)[0] for i in prepared.task.test_ids} - files.keys()
        for path in sorted(visible):
            try:
                files[path] = prepared.read(path)
            except UnicodeDecodeError:  # not a generated file: read no check from it
                continue
    return outside_plan(files, family)


def decode(node: object, depth: int = 0) -> object:
    """A value of `DRIVER`'s tagged JSON; ValueError for anything else."""
    if depth > _DEPTH:
        raise ValueError("nested too deep")
    if node is None or type(node) in (bool, str):
        return node
    if type(node) is not list or len(node) != 2 or type(node[0]) is not str:
        raise ValueError(f"not a tagged value: {type(node).__name__}")
    tag, body = node
    if tag == "int" and type(body) is str and _INT.fullmatch(body):
        return int(body)
    if tag == "float" and type(body) is str:
        return float.fromhex(body)
    kinds = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}
    if tag in kinds and type(body) is list:
        try:
            return kinds[tag](decode(x, depth + 1) for x in body)
        except TypeError as e:  # an unhashable member of a set
            raise ValueError(str(e)) from None
    if tag == "dict" and type(body) is list:
        pairs = [p for p in body if type(p) is list and len(p) == 2]
        if len(pairs) != len(body):
            raise ValueError("not a pair")
        try:
            return {decode(k, depth + 1): decode(v, depth + 1) for k, v in pairs}
        except TypeError as e:
            raise ValueError(str(e)) from None
    return _stdlib(tag, body)


def _stdlib(tag: str, body: object) -> object:
    """A date, datetime, timedelta or Decimal of the tagged JSON, built here from ints or
    decimal text (a `Decimal` compares and hashes in C: no code of the agent's runs)."""
    if tag in _DATES and type(body) is list:
        kind, size = _DATES[tag]
        if len(body) == size and all(type(x) is int for x in body):
            return kind(*body)  # ValueError, OverflowError out of range
    if tag == "decimal" and type(body) is str and _DECIMAL.fullmatch(body):
        return decimal.Decimal(body)
    raise ValueError(f"unknown tag {tag!r}")


def _holds(check: Check, answer: object) -> bool:
    if check.expect == "eq":
        return bool(answer == check.value)  # both built here: no code of the agent's runs
    if check.expect == "is":
        return answer is check.value
    if check.expect in ("truthy", "falsy"):
        return bool(answer) is (check.expect == "truthy")
    if type(answer) not in (int, float) or type(check.value) not in (int, float):
        return False
    distance = abs(answer - check.value)  # type: ignore[operator]
    return distance < check.tolerance if check.expect == "lt" else distance <= check.tolerance


def _raised(answer: object, error: object) -> bool:
    """The answer is an exception that is an instance of the builtin `error`."""
    if type(answer) is not list or len(answer) != 3 or answer[0] != "error":
        return False
    kinds = answer[2]
    return type(kinds) is list and all(type(k) is str for k in kinds) and error in kinds


def mismatches(plan: OutsidePlan, output: str, nonce: str) -> list[str]:
    """Why the driver's answers (the last line of `output` starting with `nonce`) fail the
    plan; [] when every check holds."""
    lines = [ln[len(nonce) :] for ln in output.splitlines() if ln.startswith(nonce)]
    if not lines:
        return ["no answers came back"]
    try:
        answers = json.loads(lines[-1])
    except (ValueError, RecursionError):
        return ["the answers do not decode"]
    if type(answers) is not list or len(answers) != len(plan.checks):
        return ["the answers do not match the calls"]
    bad = []
    for check, answer in zip(plan.checks, answers, strict=True):
        name = f"{check.function}{check.args}"
        if check.expect == "raises":
            if not _raised(answer, check.value):
                bad.append(f"{name}: did not raise {check.value}")
            continue
        if type(answer) is not list or len(answer) != 2 or answer[0] != "ok":
            bad.append(f"{name}: no value ({answer[1] if type(answer) is list else '?'})")
            continue
        try:
            value = decode(answer[1])
        except (ValueError, OverflowError, RecursionError) as e:
            bad.append(f"{name}: undecodable answer ({e})")
            continue
        if not _holds(check, value):
            bad.append(f"{name}: wrong value")
    return bad


def run_outside(plan: OutsidePlan, sandbox: Sandbox, python: str, timeout: float) -> list[str]:
    """Call each check's function on its arguments in a fresh interpreter of `sandbox`
    (made read-only first) and compare the answers here. [] when all hold."""
    nonce = os.urandom(16).hex()
    nonce_dir = f".shadowrl-outside-{nonce}"
    args_file = f"{nonce_dir}/calls.json"
    sandbox.write_file(args_file, json.dumps([[c.module, c.function, c.args] for c in plan.checks]))
    freeze(sandbox, nonce_dir)
    env = "env -u PYTHONSTARTUP -u PYTHONPATH PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0"
    argv = [python, "-P", "-c", DRIVER, args_file, nonce]
    res = sandbox.exec(f"{env} {shlex.join(argv)}", timeout=timeout)
    thaw(sandbox)
    if res.timed_out:
        return ["the calls timed out"]
    wrong = mismatches(plan, res.stdout[-_MAX_OUTPUT:], nonce)
    if wrong and not res.stdout.count(nonce):  # the driver died: say how, for humans
        wrong[0] += f" (exit {res.exit_code}: {res.stderr.strip()[-300:]})"
    return wrong
