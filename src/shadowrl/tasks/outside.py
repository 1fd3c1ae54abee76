"""Values compared outside the test interpreter, for function-level tasks (issue 33).

A HumanEval-style hidden test is a `check(candidate)` of assertions on calls of the
function under test with literal arguments (`candidate([1, 2], 3) == [4]`,
`candidate(x) is True`, `candidate(x)`, `not candidate(x)`, `abs(candidate(x) - 0.5) < 1e-6`). Nothing in those
assertions needs the test interpreter: the grader reads each call's arguments and
expected value from the hidden test (`outside_plan`), and a driver run in a fresh
interpreter of a fork of the final state imports the function and calls it on each
argument text, holding neither the tests nor the expected values (the hidden files are
not written into that fork). The answers come back as tagged JSON of exact builtin
types, decoded strictly here (`decode`: no `pickle`, `marshal` or `eval`); a subclass,
any other type, an exception, an answer that does not decode or a missing answer is a
failure. The comparison is made in the grader's own process (`mismatches`).

So for these assertions the verdict rests on nothing the agent's code can reach: to be
paid it must return the right values, in a process where the only way to know them is
to compute them. Assertions of other shapes are left to the test run and the canaries.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.workspace import freeze, thaw

Expect = Literal["eq", "is", "truthy", "falsy", "lt", "le"]
_INT = re.compile(r"-?\d{1,4300}")
_DEPTH = 64  # nesting an honest answer stays under; deeper is refused, not recursed into
_MAX_OUTPUT = 16 << 20  # bytes of driver output read
# Run with `python -P -c DRIVER module function args.json nonce` in the workspace: one line,
# `nonce` and the JSON list of answers, after every call (an exception is an answer too).
DRIVER = """
import importlib, json, os, sys, ast
sys.path.insert(0, os.getcwd())
module, name, path, nonce = sys.argv[1:5]
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
    raise TypeError(t.__name__)
with open(path) as f:
    calls = json.load(f)
fn = getattr(importlib.import_module(module), name)
out = []
for text in calls:
    try:
        out.append(["ok", enc(fn(*ast.literal_eval(text)))])
    except BaseException as e:
        out.append(["error", type(e).__name__])
print(nonce + json.dumps(out), flush=True)
"""


@dataclass(frozen=True)
class Check:
    """One assertion: the call's argument tuple (source text) and what it must return."""

    args: str
    expect: Expect
    value: object = (
        None  # the expected value ("eq"; "is": True, False, None), the target ("lt"/"le")
    )
    tolerance: float = 0.0  # "lt"/"le": abs(answer - value) < (<=) tolerance


@dataclass(frozen=True)
class OutsidePlan:
    module: str
    function: str
    checks: tuple[Check, ...]


def _literal(node: ast.expr) -> tuple[bool, object]:
    if isinstance(node, ast.Name):
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _call_args(node: ast.expr, param: str, source: str) -> str | None:
    """`"(a, b,)"` if `node` is `param(<literals>)`, else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    if node.func.id != param or node.keywords or not all(_literal(a)[0] for a in node.args):
        return None
    parts = [ast.get_source_segment(source, a) or "" for a in node.args]
    return "(" + "".join(p + ", " for p in parts) + ")"


def _check(test: ast.expr, param: str, source: str) -> Check | None:
    """The `Check` of one assertion's test expression, or None for any other shape."""
    if (args := _call_args(test, param, source)) is not None:
        return Check(args, "truthy")
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        args = _call_args(test.operand, param, source)
        return None if args is None else Check(args, "falsy")
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    singleton = isinstance(right, ast.Constant) and right.value in (True, False, None)
    if isinstance(op, ast.Is) and singleton and (args := _call_args(left, param, source)):
        return Check(args, "is", right.value)  # type: ignore[attr-defined]
    if isinstance(op, ast.Eq):
        for call, other in ((left, right), (right, left)):
            ok, value = _literal(other)
            if ok and (args := _call_args(call, param, source)) is not None:
                return Check(args, "eq", value)
        return None
    ok, tolerance = _literal(right)
    if isinstance(op, ast.Lt | ast.LtE) and ok and type(tolerance) in (int, float):
        return _distance(left, param, source, "lt" if isinstance(op, ast.Lt) else "le", tolerance)
    return None


def _distance(node: ast.expr, param: str, source: str, expect: Expect, tol: object) -> Check | None:
    """`abs(candidate(x) - y) < tol` (or `y - candidate(x)`, `math.fabs`)."""
    if not isinstance(node, ast.Call) or len(node.args) != 1:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    sub = node.args[0]
    if name not in ("abs", "fabs"):
        return None
    if not (isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub)):
        return None
    for call, other in ((sub.left, sub.right), (sub.right, sub.left)):
        ok, value = _literal(other)
        if ok and type(value) in (int, float) and (args := _call_args(call, param, source)):
            return Check(args, expect, value, float(tol))  # type: ignore[arg-type]
    return None


def _plan_of(source: str) -> OutsidePlan | None:
    tree = ast.parse(source)
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    check, runner = defs.get("check"), defs.get("test_check")
    if check is None or runner is None or len(check.args.args) != 1:
        return None
    called = [
        n.args[0].id
        for n in ast.walk(runner)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "check"
        and len(n.args) == 1 and isinstance(n.args[0], ast.Name)
    ]  # fmt: skip
    modules = {
        alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
        for alias in node.names
        if alias.asname is None
    }
    if len(called) != 1 or called[0] not in modules:
        return None
    param = check.args.args[0].arg
    found = [_check(s.test, param, source) for s in check.body if isinstance(s, ast.Assert)]
    checks = tuple(c for c in found if c is not None)
    return OutsidePlan(str(modules[called[0]]), called[0], checks) if checks else None


def outside_plan(hidden: Mapping[str, str | None]) -> OutsidePlan | None:
    """The value checks of the first hidden test file in the `check(candidate)` form."""
    for path, text in sorted(hidden.items()):
        if text is None or not path.endswith(".py"):
            continue
        try:
            plan = _plan_of(text)
        except (SyntaxError, ValueError):
            continue
        if plan is not None:
            return plan
    return None


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
    raise ValueError(f"unknown tag {tag!r}")


def _holds(check: Check, answer: object) -> bool:
    if check.expect == "eq":
        return bool(answer == check.value)  # both builtins: no code of the agent's runs
    if check.expect == "is":
        return answer is check.value
    if check.expect in ("truthy", "falsy"):
        return bool(answer) is (check.expect == "truthy")
    if type(answer) not in (int, float) or type(check.value) not in (int, float):
        return False
    distance = abs(answer - check.value)  # type: ignore[operator]
    return distance < check.tolerance if check.expect == "lt" else distance <= check.tolerance


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
        name = f"{plan.function}{check.args}"
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
    """Call the function on every check's arguments in a fresh interpreter of `sandbox`
    (made read-only first) and compare the answers here. [] when all hold."""
    nonce = os.urandom(16).hex()
    nonce_dir = f".shadowrl-outside-{nonce}"
    args_file = f"{nonce_dir}/calls.json"
    sandbox.write_file(args_file, json.dumps([c.args for c in plan.checks]))
    freeze(sandbox, nonce_dir)
    env = "env -u PYTHONSTARTUP -u PYTHONPATH PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0"
    argv = [python, "-P", "-c", DRIVER, plan.module, plan.function, args_file, nonce]
    res = sandbox.exec(f"{env} {shlex.join(argv)}", timeout=timeout)
    thaw(sandbox)
    if res.timed_out:
        return ["the calls timed out"]
    wrong = mismatches(plan, res.stdout[-_MAX_OUTPUT:], nonce)
    if wrong and not res.stdout.count(nonce):  # the driver died: say how, for humans
        wrong[0] += f" (exit {res.exit_code}: {res.stderr.strip()[-300:]})"
    return wrong
