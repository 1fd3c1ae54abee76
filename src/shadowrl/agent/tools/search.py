"""Search tools: regex grep and natural-language semantic search.

`grep` runs in Python on the host over files read *through the sandbox protocol*,
not as `rg` inside the sandbox: the output is then identical on every backend and
sandbox image (no dependency on what is installed there), it costs no process
spawn per call, and the sandbox's path confinement still applies to every read.
Regexes are Python's `re`; lines longer than `_MAX_LINE` are skipped to bound the
cost of a pathological pattern.
"""

from __future__ import annotations

import fnmatch
import re

from shadowrl.agent.tools.base import ToolContext, ToolError, tool
from shadowrl.search import SemanticIndex, changed_texts, get_embedder, sandbox_texts

_MAX_LINE = 2000
_MAX_FILE = 1_000_000
_SKIP = frozenset({".git", "__pycache__", ".pytest_cache", ".venv", "node_modules"})


def _in_scope(path: str, root: str, glob: str | None) -> bool:
    if any(part in _SKIP for part in path.split("/")[:-1]):
        return False
    if root and path != root and not path.startswith(root + "/"):
        return False
    name = path.rsplit("/", 1)[-1]
    return glob is None or fnmatch.fnmatch(name, glob) or fnmatch.fnmatch(path, glob)


@tool(
    "Regex search; prints path:line:text.",
    read_only=True,
    path="file or directory",
    glob="e.g. *.py",
)
def grep(ctx: ToolContext, pattern: str, path: str = ".", glob: str | None = None) -> str:
    note = ""
    try:
        regex = re.compile(pattern)
    except re.error as e:
        regex = re.compile(re.escape(pattern))
        note = f"[invalid regex ({e}); searched for the literal text]\n"
    root = path.strip("/").removeprefix("./").removeprefix(".")
    limit, hits = ctx.config.grep_max_hits, []
    for f in ctx.sandbox.list_files():
        if not _in_scope(f, root, glob):
            continue
        data = ctx.sandbox.read_file(f)
        if len(data) > _MAX_FILE or b"\0" in data[:1024]:
            continue
        for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if len(line) <= _MAX_LINE and regex.search(line):
                hits.append(f"{f}:{n}:{line}")
    if not hits:
        return note + f"No matches for {pattern!r}."
    more = (
        f"\n[{len(hits) - limit} more matches; narrow the pattern or path]"
        if len(hits) > limit
        else ""
    )
    return note + "\n".join(hits[:limit]) + more


@tool(
    "Find code by meaning, e.g. 'where is the config parsed'.",
    read_only=True,
    k="number of results",
)
def semantic_search(ctx: ToolContext, query: str, k: int = 5) -> str:
    if not 1 <= k <= 20:
        raise ToolError("k must be between 1 and 20")
    with ctx.lock:  # concurrent searches share one index update
        if ctx.index is None:  # no prepared index: build one for this workspace now
            ctx.index = SemanticIndex.build(sandbox_texts(ctx.sandbox), get_embedder())
        else:
            ctx.index = ctx.index.updated(changed_texts(ctx.sandbox, ctx.index.paths))
        hits = ctx.index.search(query, k)
    if not hits:
        return "No indexed code."
    blocks = []
    for h in hits:
        body = "\n".join(h.text.splitlines()[:6])
        blocks.append(f"{h.path}:{h.start_line}-{h.end_line} {h.symbol} ({h.score:.2f})\n{body}")
    return "\n\n".join(blocks)
