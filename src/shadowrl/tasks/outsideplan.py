"""The value checks layer 5 reads from a test file (issue 33; run by `outside.py`).

Two shapes of test are function-level, so their every assertion is a call of the
code under test with literal arguments and a value the grader can read:

- a HumanEval-style `check(candidate)` called once from `test_check()` (the easy tiers):
  its top-level assertions `candidate(args) == literal` (either side), `is True`
  (`False`, `None`), `candidate(args)` (truthy), `not candidate(args)` (falsy),
  `abs(candidate(args) - y) < eps` / `<=` (`math.fabs` too); other statements are the
  test run's;
- a file of generated tests (the family, `family/generate.py::test_file`): every
  top-level function is a `def test_*():` whose whole body is `assert f(args) ==
  literal` (any shape above) or `with pytest.raises(<builtin exception>): f(args)`, `f`
  imported by name (`from module import f`), and the file holds nothing but those and
  imports. A file with any other function, statement or test is not read: a library's
  test of that shape may compare an answer of the library's own type with a literal,
  which an exact-type answer would not equal, so an honest fix would be voided. Each of
  these tests is read whole (`OutsidePlan.whole`): its check is all it asserts. A family
  task's visible test files are of this form too, and read as well (`outside.task_plan`).

Literals are what `ast.literal_eval` reads, plus `datetime.date(...)`,
`datetime.datetime(...)`, `datetime.timedelta(...)` of int arguments and
`Decimal('<text>')`, where the file imports `datetime` and `Decimal` by those names
(the family's expected values are `repr`s of what the correct module returns).
"""

from __future__ import annotations

import ast
import builtins
import datetime
import decimal
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

Expect = Literal["eq", "is", "truthy", "falsy", "lt", "le", "raises"]
Callees = Mapping[str, tuple[str, str]]  # a name the test calls -> (module, function)
_DATES = {"date": datetime.date, "datetime": datetime.datetime, "timedelta": datetime.timedelta}


@dataclass(frozen=True)
class Check:
    """One assertion: `module.function` called on `args` (source text of the argument
    tuple, `"(a, b, )"`) and what it must give."""

    module: str
    function: str
    args: str
    expect: Expect
    # "eq": the expected value; "is": True, False or None; "lt"/"le": the target;
    # "raises": the builtin exception's name
    value: object = None
    tolerance: float = 0.0  # "lt"/"le": abs(answer - value) < (<=) tolerance


@dataclass(frozen=True)
class OutsidePlan:
    checks: tuple[Check, ...]
    # Test ids (`path::name`) read whole: the test's only statement is one of `checks`, in a
    # file of nothing else but imports and such tests (the generated form)
    whole: frozenset[str] = frozenset()

    def covers(self, test_ids: Collection[str]) -> bool:
        """Whether every one of `test_ids` (and there is one) is a test read whole, so that
        these checks holding is what all those tests passing would say (`verify.py`)."""
        return bool(test_ids) and set(test_ids) <= self.whole


def _constructed(node: ast.Call, names: frozenset[str]) -> object:
    """`datetime.date(2024, 1, 2)` or `Decimal('1.5')` where the file imports those names."""
    func, args, kws = node.func, node.args, node.keywords
    consts = [a.value for a in args if isinstance(a, ast.Constant)]
    if isinstance(func, ast.Name) and func.id == "Decimal" and "Decimal" in names:
        if len(args) == 1 and not kws and len(consts) == 1 and type(consts[0]) is str:
            try:
                return decimal.Decimal(consts[0])
            except decimal.InvalidOperation:
                raise ValueError("not a decimal") from None
    elif (
        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
        and func.value.id == "datetime" and "datetime" in names and func.attr in _DATES
    ):  # fmt: skip
        values = [ast.literal_eval(a) for a in args]
        named = {k.arg: ast.literal_eval(k.value) for k in kws if k.arg is not None}
        if len(named) == len(kws) and all(type(v) is int for v in [*values, *named.values()]):
            try:
                return _DATES[func.attr](*values, **named)
            except (TypeError, OverflowError) as e:
                raise ValueError(str(e)) from None
    raise ValueError("not a literal")


def value_of(node: ast.expr, names: frozenset[str] = frozenset()) -> object:
    """The value of a literal expression (module docstring); ValueError for anything else."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Call):
        return _constructed(node, names)
    try:
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            kind = {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)]
            return kind(value_of(e, names) for e in node.elts)
        if isinstance(node, ast.Dict) and None not in node.keys:
            pairs = zip(node.keys, node.values, strict=True)
            return {value_of(k, names): value_of(v, names) for k, v in pairs}  # type: ignore[arg-type]
    except TypeError as e:  # an unhashable member of a set or a key
        raise ValueError(str(e)) from None
    raise ValueError("not a literal")


def _literal(node: ast.expr, names: frozenset[str]) -> tuple[bool, object]:
    try:
        return True, value_of(node, names)
    except ValueError:
        return False, None


def _call(
    node: ast.expr, callees: Callees, source: str, names: frozenset[str]
) -> tuple[str, str, str] | None:
    """(module, function, `"(a, b, )"`) if `node` calls a callee on literals, else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    target = callees.get(node.func.id)
    if target is None or node.keywords or not all(_literal(a, names)[0] for a in node.args):
        return None
    parts = [ast.get_source_segment(source, a) or "" for a in node.args]
    return (*target, "(" + "".join(p + ", " for p in parts) + ")")


def _check(test: ast.expr, callees: Callees, source: str, names: frozenset[str]) -> Check | None:
    """The `Check` of one assertion's test expression, or None for any other shape."""
    if (call := _call(test, callees, source, names)) is not None:
        return Check(*call, "truthy")
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        call = _call(test.operand, callees, source, names)
        return None if call is None else Check(*call, "falsy")
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    singleton = isinstance(right, ast.Constant) and right.value in (True, False, None)
    if isinstance(op, ast.Is) and singleton and (call := _call(left, callees, source, names)):
        return Check(*call, "is", right.value)  # type: ignore[attr-defined]
    if isinstance(op, ast.Eq):
        for side, other in ((left, right), (right, left)):
            ok, value = _literal(other, names)
            if ok and (call := _call(side, callees, source, names)) is not None:
                return Check(*call, "eq", value)
        return None
    ok, tolerance = _literal(right, names)
    if isinstance(op, ast.Lt | ast.LtE) and ok and type(tolerance) in (int, float):
        expect: Expect = "lt" if isinstance(op, ast.Lt) else "le"
        return _distance(left, callees, source, names, expect, float(tolerance))  # type: ignore[arg-type]
    return None


def _distance(
    node: ast.expr, callees: Callees, source: str, names: frozenset[str], expect: Expect, tol: float
) -> Check | None:
    """`abs(f(x) - y) < tol` (or `y - f(x)`, `math.fabs`)."""
    if not isinstance(node, ast.Call) or len(node.args) != 1:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    sub = node.args[0]
    if name not in ("abs", "fabs") or not (
        isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub)
    ):
        return None
    for side, other in ((sub.left, sub.right), (sub.right, sub.left)):
        ok, value = _literal(other, names)
        if ok and type(value) in (int, float) and (call := _call(side, callees, source, names)):
            return Check(*call, expect, value, tol)
    return None


def _imports(tree: ast.Module) -> tuple[dict[str, str], frozenset[str]]:
    """({name imported once by `from module import name`: module}, the names bound as the
    generator binds them: `datetime`, `pytest` by `import`, `Decimal` from `decimal`)."""
    seen: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                seen.setdefault(alias.asname or alias.name, []).append(
                    node.module if alias.asname is None else ""
                )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                seen.setdefault(alias.asname or alias.name, []).append("")
    once = {name: mods[0] for name, mods in seen.items() if len(mods) == 1 and mods[0]}
    names = {m for m in ("datetime", "pytest") if seen.get(m) == [""]}
    names |= {"Decimal"} if once.get("Decimal") == "decimal" else set()
    return once, frozenset(names)


def _check_form(tree: ast.Module, source: str) -> tuple[Check, ...]:
    """The value checks of a `check(candidate)` run once by `test_check()`."""
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    check, runner = defs.get("check"), defs.get("test_check")
    if check is None or runner is None or len(check.args.args) != 1:
        return ()
    called = [
        n.args[0].id
        for n in ast.walk(runner)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "check"
        and len(n.args) == 1 and isinstance(n.args[0], ast.Name)
    ]  # fmt: skip
    modules, names = _imports(tree)
    if len(called) != 1 or called[0] not in modules:
        return ()
    callees = {check.args.args[0].arg: (modules[called[0]], called[0])}
    found = [
        _check(s.test, callees, source, names) for s in check.body if isinstance(s, ast.Assert)
    ]
    return tuple(c for c in found if c is not None)


def _raises(stmt: ast.With, callees: Callees, source: str, names: frozenset[str]) -> Check | None:
    """`with pytest.raises(ValueError): f(args)`: a builtin exception, nothing else in it."""
    if len(stmt.items) != 1 or stmt.items[0].optional_vars is not None or len(stmt.body) != 1:
        return None
    ctx, body = stmt.items[0].context_expr, stmt.body[0]
    pytest_raises = isinstance(ctx, ast.Call) and ast.unparse(ctx.func) == "pytest.raises"
    if not (pytest_raises and "pytest" in names and isinstance(ctx, ast.Call)):
        return None
    if ctx.keywords or len(ctx.args) != 1 or not isinstance(ctx.args[0], ast.Name):
        return None
    error = ctx.args[0].id
    kind = getattr(builtins, error, None)
    if not (isinstance(kind, type) and issubclass(kind, BaseException)):
        return None
    if (
        not isinstance(body, ast.Expr)
        or (call := _call(body.value, callees, source, names)) is None
    ):
        return None
    return Check(*call, "raises", error)


def _tests_form(tree: ast.Module, source: str) -> tuple[tuple[str, Check], ...]:
    """(test name, its check) of each test of a file of generated tests (module
    docstring), () for any other file."""
    modules, names = _imports(tree)
    stars = [
        a for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names if a.name == "*"
    ]
    if stars:  # a star import could rebind any name the tests call
        return ()
    callees = {name: (module, name) for name, module in modules.items() if name not in names}
    checks = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if not (
            isinstance(node, ast.FunctionDef) and node.name.startswith("test")
            and not node.decorator_list and not node.args.args and not node.args.posonlyargs
            and not node.args.kwonlyargs and not node.args.vararg and not node.args.kwarg
            and len(node.body) == 1
        ):  # fmt: skip
            return ()
        stmt = node.body[0]
        if isinstance(stmt, ast.Assert) and stmt.msg is None:
            check = _check(stmt.test, callees, source, names)
        else:
            check = _raises(stmt, callees, source, names) if isinstance(stmt, ast.With) else None
        if check is None:
            return ()
        checks.append((node.name, check))
    return tuple(checks)


def outside_plan(files: Mapping[str, str | None], generated: bool = False) -> OutsidePlan | None:
    """The value checks of every test file of `files` (path -> text) of one of the two
    shapes (None: none).

    Files of generated tests are read only for a task whose tests the family generated
    (`generated`): there the module each test imports sits at the workspace root, where
    the driver imports it. Elsewhere a test of that shape may import through the
    project's own pytest set-up (`pythonpath = src`), which the driver does not have."""
    checks: list[Check] = []
    whole: set[str] = set()
    for path, text in sorted(files.items()):
        if text is None or not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        if found := _check_form(tree, text):
            checks += found
        elif generated and (tests := _tests_form(tree, text)):
            checks += [check for _, check in tests]
            whole |= {f"{path}::{name}" for name, _ in tests}
    return OutsidePlan(tuple(checks), frozenset(whole)) if checks else None
