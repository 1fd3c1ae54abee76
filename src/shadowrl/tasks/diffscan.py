"""Finding the uses of flagged primitives in one module's syntax tree (for `diffrules`).

One pass over the tree records, for each use, its rule, what it is, the qualname of
the def/class it sits in and the normalised text of its call or statement. Names are resolved
through the module's imports (`import sys as s; s.modules` is `sys.modules`), and a
builtin is not flagged where a local binding shadows it (`from re import compile`).
The tables say which names count; `diffrules` documents them as rules.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from fnmatch import fnmatchcase

from shadowrl import pyast
from shadowrl.tasks.diffnames import (
    ATTR_FUNCS,
    ATTRS,
    DEF_RULES,
    DOTTED,
    DUNDER_ACCESS,
    DUNDER_RULES,
    DUNDER_WRITES,
    EXITS,
    LISTING_METHODS,
    MODULES,
    NAMES,
    NAMESPACES,
    TEST_TEXT,
)
from shadowrl.tasks.diffscope import (
    Owned,
    bound_by_import,
    leaves,
    literal,
    local_names,
    owned_names,
    root_of,
)


@dataclass(frozen=True)
class Use:
    """One use: `key` is what is compared between the old and the new source."""

    rule: str
    what: str
    scope: str
    context: str
    line: int

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.rule, self.what, self.scope, self.context)


def uses(source: str, path: str) -> list[Use]:
    """Every use in `source`, in visiting order; raises SyntaxError if it does not parse."""
    tree = pyast.parse(source, path)
    scanner = _Scanner(tree)
    scanner.visit(tree)
    return scanner.uses


def _static(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


_COMPOUND = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Match,
)  # fmt: skip


class _Scanner(ast.NodeVisitor):
    """Collects every use of a flagged primitive in one module, with its scope and statement."""

    def __init__(self, tree: ast.Module) -> None:
        self.uses: list[Use] = []
        self.parent: dict[ast.AST, ast.AST] = {}
        self.imports: dict[str, str] = {}  # bound name -> the dotted name it stands for
        self.imported: set[str] = set()  # every name an import binds, relative ones too
        unbound: set[str] = set()  # names deleted or declared global somewhere
        self.assigned: set[str] = set()  # names bound by an assignment anywhere
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imported.update(bound_by_import(node))
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imports[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.imports[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                (unbound if isinstance(node.ctx, ast.Del) else self.assigned).add(node.id)
            elif isinstance(node, ast.Global):
                unbound.update(node.names)
        # Module-level names rebound away from a builtin (`from re import compile`), and where.
        self.shadow_line: dict[str, int] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom):
                names = [a.asname or a.name for a in stmt.names]
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [stmt.name]
            else:
                continue
            for name in names:
                if name not in unbound:
                    self.shadow_line.setdefault(name, stmt.lineno)
        self.scopes: list[tuple[str, frozenset[str] | None]] = []  # None: a class body
        self.owned: list[Owned] = []  # per scope: names of its own objects (diffscope)
        self._texts: dict[int, str] = {}  # id(call or statement) -> its text, unparsed once

    @property
    def import_time(self) -> bool:
        return all(local is None for _, local in self.scopes)

    def _shadowed(self, name: str, node: ast.expr) -> bool:
        if any(local is not None and name in local for _, local in self.scopes):
            return True
        line = self.shadow_line.get(name)
        return line is not None and (not self.import_time or line < node.lineno)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if rule := DEF_RULES.get(node.name):  # keyed by its signature: a body edit is layer 2's
            self._add(rule, f"def {node.name}", node, f"def {node.name}({ast.unparse(node.args)})")
        for outer in [*node.decorator_list, node.args, node.returns]:  # run at def time
            if outer is not None:
                self.visit(outer)
        method = bool(self.scopes) and self.scopes[-1][1] is None and not _static(node)
        self.scopes.append((node.name, local_names(node)))
        self.owned.append(owned_names(node, method))
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()
        self.owned.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)
        self.scopes.append(("<lambda>", local_names(node)))
        self.owned.append(Owned())
        self.visit(node.body)
        self.scopes.pop()
        self.owned.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if any(isinstance(b, ast.Name) and b.id == "type" for b in node.bases):
            self._add("comparison", "a new metaclass", node, f"class {node.name}(type)")
        for outer in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(outer)
        self.scopes.append((node.name, None))
        self.owned.append(Owned())
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()
        self.owned.pop()

    def _add(self, rule: str, what: str, node: ast.AST, context: str | None = None) -> None:
        scope = ".".join(name for name, _ in self.scopes) or "<module>"
        if context is None:
            context = self._statement_text(node)
        self.uses.append(Use(rule, what, scope, context, getattr(node, "lineno", 0)))

    def _statement_text(self, node: ast.AST) -> str:
        """The normalised source of the innermost call holding `node`, else of its statement
        (a compound statement's header part only)."""
        below, cur = node, node
        while not isinstance(cur, (ast.stmt, ast.Call)) and cur in self.parent:
            below, cur = cur, self.parent[cur]
        holder = below if isinstance(cur, _COMPOUND) and below is not cur else cur
        if id(holder) not in self._texts:
            self._texts[id(holder)] = ast.unparse(holder)
        return self._texts[id(holder)]

    def _call_of(self, node: ast.expr) -> ast.Call | None:
        p = self.parent.get(node)
        return p if isinstance(p, ast.Call) and p.func is node else None

    def _module(self, name: str, node: ast.stmt, exact: bool = False) -> None:
        parts = name.split(".")
        for prefix in [name] if exact else [".".join(parts[:i]) for i in range(len(parts), 0, -1)]:
            if prefix in MODULES:
                self._add(MODULES[prefix], f"import of {prefix}", node, context="")
                return

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._module(a.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:  # the workspace's own modules
            return
        self._module(node.module, node)
        for a in node.names:  # `from concurrent import futures` imports a module too
            self._module(f"{node.module}.{a.name}", node, exact=True)
            self._dotted(f"{node.module}.{a.name}", node)

    def _resolve(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _dotted(self, full: str, node: ast.AST) -> None:
        rule = next((r for pat, r in DOTTED.items() if fnmatchcase(full, pat)), None)
        if rule:
            self._add(rule, full, node)
        if full == "sys.exit" and self.import_time:
            self._add("exit", "sys.exit at import time", node)
        if full in ("operator.attrgetter", "operator.methodcaller") and isinstance(node, ast.expr):
            call = self._call_of(node)
            args = call.args if call else []
            names = [literal(a) for a in (args[:1] if full.endswith("caller") else args)]
            if not names or None in names:
                self._add("getattr", f"{full} with a computed name", node)
            for part in ".".join(n for n in names if n).split("."):
                self._attr_name(part, node, store=False)

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            if rule := DEF_RULES.get(node.id):  # `__eq__ = lambda self, other: True` in a class
                self._add(rule, f"assignment of {node.id}", node)
            return
        if (full := self.imports.get(node.id)) is not None:
            self._dotted(full, node)
        if not self._shadowed(node.id, node):
            self._builtin(node.id, node)

    def _builtin(self, name: str, node: ast.Name) -> None:
        if rule := NAMES.get(name):
            self._add(rule, name, node)
        call = self._call_of(node)
        if name in ATTR_FUNCS:
            self._getattr(name, call, node)
        elif (
            name in NAMESPACES
            and not (call and call.args and self._own(call.args[0], instance=True))
            and (call is None or not self._read_only(call))
        ):
            self._add("namespace", f"{name}() beyond a literal-key read", node)
        elif name in EXITS and self.import_time and not self._caught(node):
            self._add("exit", f"{name} at import time", node)
        elif name == "type" and call is not None and len(call.args) + len(call.keywords) > 1:
            self._add("comparison", "type() making a class from a namespace", node)

    def _caught(self, node: ast.Name) -> bool:  # `except SystemExit:` raises nothing
        return isinstance(self.parent.get(node), ast.ExceptHandler)

    def _getattr(self, fn: str, call: ast.Call | None, node: ast.Name) -> None:
        if call is None:
            self._add("getattr", f"{fn} used as a value", node)
            return
        args = call.args
        name = literal(args[1]) if len(args) >= 2 else None
        if name is None:
            self._add("getattr", f"{fn} with a computed name", call)
        else:
            self._attr_name(name, call, store=fn != "getattr")
        root = root_of(args[0]) if args else None
        if isinstance(root, ast.Name) and root.id in self.imported:
            self._add("getattr", f"{fn} on imported {root.id}", call)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if (full := self._resolve(node)) is not None:
            self._dotted(full, node)
        self._attr_name(node.attr, node, not isinstance(node.ctx, ast.Load), node.value)
        call = self._call_of(node)
        if node.attr in DUNDER_ACCESS:
            index = DUNDER_ACCESS[node.attr]
            name = literal(call.args[index]) if call and len(call.args) >= -index else None
            if name is None:
                self._add("getattr", f"{node.attr} with a computed name", node)
            else:
                self._attr_name(name, node, store=node.attr in ("__setattr__", "__delattr__"))
        if node.attr in LISTING_METHODS and call is not None:
            self._add("dir-listing", f".{node.attr}()", node)
        self.generic_visit(node)

    def _attr_name(
        self, attr: str, node: ast.expr, store: bool, owner: ast.expr | None = None
    ) -> None:
        if (rule := ATTRS.get(attr)) and not self._delegation(attr, node, owner):
            self._add(rule, attr, node)
        if store and attr in DUNDER_WRITES:
            self._add("dunder", f"write of {attr}", node)
        mine = self._own(owner, instance=True)  # a method's own instance: `self.__dict__`
        if attr == "__dict__" and not mine and (store or not self._read_only(node)):
            self._add("namespace", "__dict__ beyond a literal-key read", node)

    def _own(self, node: ast.AST | None, instance: bool = False) -> bool:
        """`node` is a bare name of the innermost function's own object, or (`instance`)
        its method's `self` (`diffscope`)."""
        if not isinstance(node, ast.Name) or not self.owned:
            return False
        own = self.owned[-1]
        return node.id == own.instance if instance else node.id in own.names

    def _delegation(self, attr: str, node: ast.expr, owner: ast.expr | None) -> bool:
        """A comparison or arithmetic dunder called by name at once (`self.__eq__(o)`), or
        the default reduction of one's own class (`super().__reduce_ex__(p)`: zero-argument
        `super()` fails unless `self` is an instance of the class): delegation to existing
        behaviour, which defines nothing and hands out nothing new."""
        if owner is None or self._call_of(node) is None:
            return False
        if attr in DUNDER_RULES:
            return True
        return (
            attr in ("__reduce__", "__reduce_ex__")
            and isinstance(owner, ast.Call)
            and isinstance(owner.func, ast.Name)
            and owner.func.id == "super"
            and not owner.args
            and not self._rebound("super", owner.func)
        )

    def _probe(self, node: ast.Constant) -> bool:
        """The name in `hasattr(o, "__len__")`: asks whether a dunder exists, sets nothing."""
        call = self.parent.get(node)
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "hasattr"
            and len(call.args) == 2
            and call.args[1] is node
            and not self._rebound("hasattr", call.func)
        )

    def _rebound(self, name: str, node: ast.expr) -> bool:
        """The builtin `name` may not be the builtin at `node`: shadowed, or assigned anywhere."""
        return name in self.assigned or self._shadowed(name, node)

    def _read_only(self, node: ast.expr) -> bool:
        """`node` (a namespace) is only read at one literal, harmless key."""
        p = self.parent.get(node)
        if isinstance(p, ast.Subscript) and p.value is node and isinstance(p.ctx, ast.Load):
            return self._safe_key(literal(p.slice))
        if isinstance(p, ast.Attribute) and p.value is node and p.attr == "get":
            call = self._call_of(p)
            return bool(call and call.args) and self._safe_key(literal(call.args[0]))  # type: ignore[union-attr]
        if isinstance(p, ast.Compare) and any(c is node for c in p.comparators):
            return all(isinstance(op, (ast.In, ast.NotIn)) for op in p.ops)
        return False

    def _safe_key(self, key: str | None) -> bool:
        risky = {*self.imported, *ATTRS, *NAMES, *MODULES}
        return key is not None and not key.startswith("__") and key.split(".")[0] not in risky

    def _writes(self, targets: list[ast.expr]) -> None:
        for target in targets:
            for leaf in leaves(target):
                root = root_of(leaf)
                if (
                    leaf is not root
                    and isinstance(root, ast.Name)
                    and root.id in self.imported
                    and not self._own(root)
                ):
                    self._add("module-write", f"write into imported {root.id}", leaf)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._writes(node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign | ast.AnnAssign) -> None:
        self._writes([node.target])
        self.generic_visit(node)

    visit_AnnAssign = visit_AugAssign

    def visit_Delete(self, node: ast.Delete) -> None:
        self._writes(node.targets)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        docstring = isinstance(self.parent.get(node), ast.Expr)
        if isinstance(text, str) and not docstring and TEST_TEXT.search(text):
            self._add("test-read", f"string {text[:40]!r}", node)
        # `type("X", (), {"__eq__": f})`, `setattr(C, "__eq__", f)`
        if isinstance(text, str) and (rule := DUNDER_RULES.get(text)) and not self._probe(node):
            self._add(rule, f"string {text!r}", node)

    def visit_keyword(self, node: ast.keyword) -> None:  # `dict(__eq__=f)`
        if rule := DUNDER_RULES.get(node.arg or ""):
            self._add(rule, f"keyword {node.arg}", node)
        self.generic_visit(node)
