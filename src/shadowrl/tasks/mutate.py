"""AST-level bug injection: small, realistic, one-token-ish mutations of real code.

Each operator looks at one AST node inside a function body and proposes replacement
source for exactly that node's span (or deletes a guard clause's lines), so the rest
of the file keeps its formatting and comments and the bug diff is one line. A mutant
whose AST equals the original's (e.g. `x + 0` -> `x - 0` on a constant) is a no-op
and is dropped. Everything here is pure: text in, text out.

Operators: flip a comparison, swap a binary or boolean operator, drop a `not`,
shift an integer constant or a slice bound by one, swap two call arguments, return
None instead of a value, and delete a guard clause (`if ...: return/raise/...`).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from shadowrl import pyast

_CMP_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip
_BIN_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult, ast.Mod: ast.FloorDiv, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
    ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.Pow: ast.Mult,
}  # fmt: skip
_BOOL_SWAP: dict[type[ast.boolop], type[ast.boolop]] = {ast.And: ast.Or, ast.Or: ast.And}
_GUARD_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


@dataclass(frozen=True)
class Mutation:
    """Replace source span [start, end) (byte offsets) with `text`; `line` is 1-based."""

    operator: str
    line: int
    start: int
    end: int
    text: str
    function: str

    def describe(self) -> str:
        return f"{self.operator} in {self.function}() at line {self.line}"


Proposal = tuple[str, ast.AST]  # (operator name, replacement node)


def _cmp(node: ast.AST) -> Iterator[Proposal]:
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _CMP_FLIP:
                new = copy.deepcopy(node)
                new.ops[i] = _CMP_FLIP[type(op)]()
                yield "flip comparison", new


def _binop(node: ast.AST) -> Iterator[Proposal]:
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
        new = copy.deepcopy(node)
        new.op = _BIN_SWAP[type(node.op)]()
        yield "swap binary operator", new


def _boolop(node: ast.AST) -> Iterator[Proposal]:
    if isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = _BOOL_SWAP[type(node.op)]()
        yield "swap boolean operator", new
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not", copy.deepcopy(node.operand)


def _const(node: ast.AST) -> Iterator[Proposal]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        for delta in (1, -1):
            if node.value + delta >= 0:
                yield "shift constant", ast.Constant(node.value + delta)


def _slice(node: ast.AST) -> Iterator[Proposal]:
    if isinstance(node, ast.Slice):
        for field in ("lower", "upper"):
            bound = getattr(node, field)
            if bound is None or isinstance(bound, ast.Constant):
                continue  # constants are covered by `shift constant`
            for op in (ast.Add(), ast.Sub()):
                new = copy.deepcopy(node)
                setattr(new, field, ast.BinOp(copy.deepcopy(bound), op, ast.Constant(1)))
                yield "shift slice bound", new


def _swap_args(node: ast.AST) -> Iterator[Proposal]:
    if not isinstance(node, ast.Call) or len(node.args) < 2:
        return
    if not any(isinstance(a, ast.Starred) for a in node.args[:2]):
        new = copy.deepcopy(node)
        new.args[0], new.args[1] = new.args[1], new.args[0]
        yield "swap call arguments", new


def _return_none(node: ast.AST) -> Iterator[Proposal]:
    returns_none = (
        isinstance(node, ast.Return)
        and isinstance(node.value, ast.Constant)
        and node.value.value is None
    )
    if isinstance(node, ast.Return) and node.value is not None and not returns_none:
        yield "return None", ast.Return(ast.Constant(None))


OPERATORS: dict[str, Callable[[ast.AST], Iterator[Proposal]]] = {
    "comparison": _cmp,
    "binary": _binop,
    "boolean": _boolop,
    "constant": _const,
    "slice": _slice,
    "call_args": _swap_args,
    "return_none": _return_none,
}


class _Source:
    """Byte offsets of (line, col) positions; AST columns are UTF-8 byte offsets."""

    def __init__(self, text: str) -> None:
        self.data = text.encode()
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _body_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Nodes of the function's own body (not nested defs, not the docstring)."""
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _guards(fn: ast.FunctionDef | ast.AsyncFunctionDef, src: _Source) -> Iterator[Mutation]:
    """Delete `if cond: <exit>` statements (whole lines) whose removal leaves a body."""
    for node in _body_nodes(fn):
        for block in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if not isinstance(block, list) or len(block) < 2:
                continue
            for stmt in block:
                if (
                    isinstance(stmt, ast.If)
                    and not stmt.orelse
                    and isinstance(stmt.body[-1], _GUARD_EXITS)
                ):
                    start = src.starts[stmt.lineno - 1]
                    end = src.starts[stmt.end_lineno or stmt.lineno]
                    yield Mutation("remove guard clause", stmt.lineno, start, end, "", fn.name)


ALL_OPERATORS = (*OPERATORS, "guard")


def check_operators(operators: Iterable[str], what: str = "mutation operators") -> None:
    """A ValueError naming those of `operators` that are not in `ALL_OPERATORS`."""
    if unknown := sorted(set(operators) - set(ALL_OPERATORS)):
        raise ValueError(f"unknown {what} {unknown}; known: {ALL_OPERATORS}")


def candidate_mutations(source: str, operators: Sequence[str] = ALL_OPERATORS) -> list[Mutation]:
    """Every single-site mutation of every function in `source`, in source order."""
    check_operators(operators)
    node_ops = [OPERATORS[name] for name in operators if name in OPERATORS]
    tree = pyast.parse(source)
    src = _Source(source)
    out: list[Mutation] = []
    for fn in _functions(tree):
        for node in _body_nodes(fn):
            if not hasattr(node, "end_col_offset") or isinstance(node, ast.expr_context):
                continue
            for propose in node_ops:
                for op_name, new in propose(node):
                    start, end = src.span(node)
                    line: int = node.lineno  # type: ignore[attr-defined]
                    out.append(Mutation(op_name, line, start, end, ast.unparse(new), fn.name))
        if "guard" in operators:
            out.extend(_guards(fn, src))
    return sorted(out, key=lambda m: (m.start, m.end, m.text))


def apply_mutations(source: str, mutations: Sequence[Mutation]) -> str:
    """Apply non-overlapping mutations (any order) to `source`."""
    data = source.encode()
    last = len(data) + 1
    for m in sorted(mutations, key=lambda m: m.start, reverse=True):
        if m.end > last:
            raise ValueError("overlapping mutations")
        data = data[: m.start] + m.text.encode() + data[m.end :]
        last = m.start
    return data.decode()


def is_effective(source: str, mutated: str) -> bool:
    """False for a no-op (same AST) or a mutant that no longer parses."""
    try:
        return ast.unparse(pyast.parse(mutated)) != ast.unparse(pyast.parse(source))
    except SyntaxError:
        return False


def mutants(
    source: str, operators: Sequence[str] = ALL_OPERATORS
) -> Iterator[tuple[Mutation, str]]:
    """(mutation, mutated source) for each effective single-site mutation."""
    for m in candidate_mutations(source, operators):
        mutated = apply_mutations(source, [m])
        if is_effective(source, mutated):
            yield m, mutated
