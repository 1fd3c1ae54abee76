"""Which names a function binds, and which of them are its own objects (for `diffscan`).

`local_names` is every name a function binds (a local `eval` is not the builtin).
`owned_names` is narrower: the names that hold objects the function itself made or
was handed as its instance. Maintainers' fixes write into and read the state of
those all the time (`copy = type(self)(); copy.items = ...` in a `__copy__`, even
where `copy` is also an imported module; `self.__dict__.copy()` in a `__getstate__`).
A name is owned when

- it is the first parameter of a method (`self`, `cls`; not of a staticmethod), never
  rebound in its body: its `instance`, or
- every binding of it in the body is a plain assignment of a call or a literal
  display (`new = cls.__new__(cls)`, `state = {}`), and it is no parameter.

An assignment of another name or attribute (`json = j`, `m = self.mod`) makes an
alias, not a new object: such a name is not owned, so writes through it still count
as writes into what it may alias. A call that returns a module (`m = f()`) is the
known limit of aliasing that `diffrules` documents: syntax cannot see what a call
returns. Nor can it see what a method is called on: `C.method(json)` runs the method
with a module as `self` (the residual risk `diffrules` documents for `__dict__`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
# Values that make a new object rather than alias an existing one.
_MADE = (
    ast.Call, ast.Constant, ast.Dict, ast.List, ast.Set, ast.Tuple, ast.DictComp,
    ast.ListComp, ast.SetComp, ast.JoinedStr,
)  # fmt: skip


def literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def root_of(node: ast.AST) -> ast.AST:
    """`a` of `a.b[c].d`: the object an attribute/item chain starts from."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def leaves(target: ast.AST) -> Iterator[ast.AST]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from leaves(elt)
    elif isinstance(target, ast.Starred):
        yield from leaves(target.value)
    else:
        yield target


def bound_by_import(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    for a in node.names:
        yield a.asname or a.name.split(".")[0]


def _body(fn: Function) -> list[ast.AST]:
    return list(fn.body) if isinstance(fn.body, list) else [fn.body]


def _walk_body(fn: Function) -> Iterator[ast.AST]:
    """The nodes of a function's own scope: nested defs and classes give their name only."""
    stack = _body(fn)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(n))


def local_names(fn: Function) -> frozenset[str]:
    """Names local to a function (a local `eval` is not the builtin), nested scopes aside."""
    names = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    declared: set[str] = set()
    for n in _walk_body(fn):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            names.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update(bound_by_import(n))
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            declared.update(n.names)
    return frozenset(names - declared)


def _made_targets(n: ast.AST) -> list[ast.Name]:
    """The plain-name targets of an assignment that makes a new object (`x = f()`)."""
    if isinstance(n, ast.Assign) and isinstance(n.value, _MADE):
        return [t for t in n.targets if isinstance(t, ast.Name)]
    if isinstance(n, ast.AnnAssign) and isinstance(n.value, _MADE):
        return [n.target] if isinstance(n.target, ast.Name) else []
    return []


@dataclass(frozen=True)
class Owned:
    """What one scope owns: `names` its own objects, `instance` its method's `self`."""

    names: frozenset[str] = frozenset()
    instance: str | None = None


def owned_names(fn: Function, method: bool) -> Owned:
    """The names of `fn` that only hold its own objects (see the module docstring);
    `method`: `fn` is defined directly in a class body and is no staticmethod."""
    made: set[str] = set()
    other: set[str] = set()  # bound in the body otherwise
    made_nodes: set[int] = set()
    for n in _walk_body(fn):
        targets = _made_targets(n)
        made.update(t.id for t in targets)
        made_nodes.update(id(t) for t in targets)
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            if id(n) not in made_nodes:
                other.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            other.update(bound_by_import(n))
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            other.update(n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            other.add(n.name)
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    positional = [*fn.args.posonlyargs, *fn.args.args]
    first = positional[0].arg if method and positional else None
    instance = first if first is not None and first not in made | other else None
    names = made - other - params
    if instance is not None:
        names.add(instance)
    return Owned(frozenset(names), instance)
