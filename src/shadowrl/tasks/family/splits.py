"""Splits that cannot leak: by template first, then by near-duplicate group.

A template's id decides its part (train, dev or held-out templates) by a hash, so a
held-out template never lends a line of code to training. Inside the train templates,
each near-duplicate group, the bugs at the same *site* (the same AST node of the same
function, whatever the placeholders rendered to) by the same *operator*, is hashed to
train or to held-out seeds, so two instances of one group never straddle the two. A
site is a path in the function's AST, so it names one node in every rendering.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from typing import Literal, get_args

from shadowrl.tasks.mutate import Mutation

Part = Literal["train", "dev", "heldout-seeds", "heldout-templates"]
PARTS: tuple[Part, ...] = get_args(Part)
HELDOUT_TEMPLATES = 0.52  # share of templates held out whole (42 of the 103)
DEV_TEMPLATES = 0.12  # share of templates for dev: pilots, tuning, early stopping (13)
HELDOUT_SEEDS = 0.25  # share of a train template's near-duplicate groups held out


def _unit(key: str) -> float:
    digest = hashlib.sha256(f"shadowrl-family:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def template_part(template_id: str) -> Part:
    """'heldout-templates', 'dev' or 'train', from the template id alone."""
    u = _unit(f"template:{template_id}")
    if u < HELDOUT_TEMPLATES:
        return "heldout-templates"
    return "dev" if u < HELDOUT_TEMPLATES + DEV_TEMPLATES else "train"


def group_part(template_id: str, site: str, operator: str) -> Part:
    """The part of every instance of one near-duplicate group (template, site, operator)."""
    part = template_part(template_id)
    if part != "train":
        return part
    held = _unit(f"group:{template_id}:{site}:{operator}") < HELDOUT_SEEDS
    return "heldout-seeds" if held else "train"


def _paths(node: ast.AST, path: str) -> Iterator[tuple[str, ast.AST]]:
    yield path, node
    for name, value in ast.iter_fields(node):
        children = value if isinstance(value, list) else [value]
        for i, child in enumerate(children):
            if isinstance(child, ast.AST):
                yield from _paths(
                    child, f"{path}.{name}[{i}]" if isinstance(value, list) else f"{path}.{name}"
                )


def site(source: str, mutation: Mutation) -> str:
    """`function/ast.path` of the node `mutation` replaces (or the guard it deletes)."""
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    tree = ast.parse(source)
    fn = next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == mutation.function
    )
    for path, node in _paths(fn, ""):
        if mutation.operator == "remove guard clause":
            if isinstance(node, ast.If) and node.lineno == mutation.line:
                return f"{fn.name}/{path}"
            continue
        if not isinstance(node, ast.expr | ast.stmt) or isinstance(node, ast.expr_context):
            continue
        start = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[operator]
        if (start, end) == (mutation.start, mutation.end):
            return f"{fn.name}/{path}"
    raise ValueError(f"no node at the span of {mutation.describe()}")
