"""The special-case adversary: a "fix" that hard-codes the reported input.

It reads the report's `>>>` call, looks up that call's expected result in the hidden
tests (what the report states in words), and puts `if (args) == (reported): return
expected` at the top of the function. It answers the report exactly and fixes nothing
else; a sound family task gives it 0, because the hidden tests hold another failing
input. `tasks validate` plays it through the real harness beside gold and noop.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from shadowrl.tasks.prepare import PreparedTask

LITERAL_IMPORTS = {"datetime.": "import datetime", "Decimal(": "from decimal import Decimal"}
_CALL = re.compile(r"^>>> (?!from )(\w+)\((.*)\)$", re.M)
_MODULE = re.compile(r"^>>> from (\w+) import", re.M)


@dataclass(frozen=True)
class Reported:
    """The call a family report states, and what the hidden tests expect of it."""

    module: str
    function: str
    call: str  # `fn(args)` as in the report and in the test
    returns: str = ""  # the expected literal, or
    raises: str = ""  # the expected exception type

    @property
    def args(self) -> str:
        """The call's arguments as a literal tuple (`call_outcomes`' form)."""
        inner = self.call[len(self.function) + 1 : -1]
        return f"({inner},)" if inner.strip() else "()"


def reported(prepared: PreparedTask) -> Reported:
    """The report's call and its expected outcome (ValueError: no family report)."""
    statement = prepared.task.problem_statement
    call, module = _CALL.search(statement), _MODULE.search(statement)
    if call is None or module is None:
        raise ValueError(f"{prepared.task.instance_id}: no `>>>` call in the report")
    text = f"{call[1]}({call[2]})"
    for tests in prepared.hidden_files().values():
        found = re.search(rf"^    assert {re.escape(text)} == (.+)$", tests or "", re.M)
        if found:
            return Reported(module[1], call[1], text, returns=found[1])
        raising = rf"^    with pytest\.raises\((\w+)\):\n        {re.escape(text)}$"
        if found := re.search(raising, tests or "", re.M):
            return Reported(module[1], call[1], text, raises=found[1])
    raise ValueError(f"{prepared.task.instance_id}: no hidden test of {text}")


def special_case(prepared: PreparedTask) -> tuple[str, str]:
    """(path, new text) of the module with the reported call hard-coded."""
    rep = reported(prepared)
    path = f"{rep.module}.py"
    outcome = f"raise {rep.raises}('special case')" if rep.raises else f"return {rep.returns}"
    return path, hard_code(prepared.read(path) or "", rep.function, rep.call, outcome)


def hard_code(source: str, function: str, call_text: str, outcome: str) -> str:
    """`source` with `if (params) == (the call's args): <outcome>` at the top of `function`
    (after its docstring); `outcome` is a `return ...` or `raise ...` statement."""
    fn = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef) and n.name == function
    )
    call = ast.parse(call_text, mode="eval").body
    assert isinstance(call, ast.Call)
    names = [a.arg for a in fn.args.args[: len(call.args)]]
    args = [ast.unparse(a) for a in call.args]
    first = fn.body[1] if ast.get_docstring(fn) is not None and len(fn.body) > 1 else fn.body[0]
    pad = " " * first.col_offset
    guard = f"{pad}if ({', '.join(names)},) == ({', '.join(args)},):\n{pad}    {outcome}\n"
    if not names:
        guard = f"{pad}{outcome}\n"
    for name, line in LITERAL_IMPORTS.items():  # what a date's or a Decimal's literal names
        if name in call_text + outcome:
            guard = f"{pad}{line}\n{guard}"
    lines = source.splitlines(keepends=True)
    lines.insert(first.lineno - 1, guard)
    return "".join(lines)
