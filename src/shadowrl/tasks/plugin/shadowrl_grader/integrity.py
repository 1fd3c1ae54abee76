"""That nothing rewrote the test framework, the grader's own modules or the watch's state.

The code under test can reach every module through an alias of `sys.modules` and the
watch through `sys.getprofile()`; it cannot reach the audit hook's closure. So
`make_integrity` runs when the hook is installed, before any workspace module is
imported, and keeps what it saw in the closure it returns (which the hook holds):

- pytest's, `_pytest`'s and pluggy's functions and classes, and the functions, code
  objects and descriptors inside those classes (pytest's `legacypath` patches `Config`
  itself: a replacement whose code comes from a framework file is pytest's own);
- every global of the grader's modules (`shadowrl_grader*`), by identity, and the
  members of their classes: a helper replaced (`guard.changed = lambda: []`) or a table
  emptied shows;
- the watch's closure cells (and those of the functions in them, recursively), the
  attributes of the `Places` it consults, and that it is still the profile function of
  this thread and of the threads `threading` starts.

The check compares by identity with what the closure holds, through builtins bound at
install time, so rebinding a global or a builtin does not change what it does.
"""

from __future__ import annotations

import os
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

_FRAMEWORK = ("pytest", "_pytest", "pluggy")
_OWN = "shadowrl_grader"
_MUTABLE = {
    ("_pytest.assertion.util", "_reprcompare"),
    ("_pytest.assertion.util", "_config"),
    ("_pytest.assertion.util", "_assertion_pass"),
}  # fmt: skip  (pytest sets these)
_MISSING = object()
# (label, holder, key, value then, whether a framework file may have replaced it);
# key None: `holder.__code__`, else `vars(holder)[key]`.
Entry = tuple[str, object, "str | None", object, bool]


def _members(name: str, attr: str, cls: type, own: bool) -> list[Entry]:
    out: list[Entry] = []
    for key, member in list(vars(cls).items()):
        func = getattr(member, "__func__", member)
        if own or callable(member) or isinstance(member, (classmethod, staticmethod, property)):
            out.append((f"{name}.{attr}.{key}", cls, key, member, not own))
            if isinstance(func, types.FunctionType):
                out.append((f"{name}.{attr}.{key}.__code__", func, None, func.__code__, not own))
    return out


def _snapshot() -> list[Entry]:
    out: list[Entry] = []
    for name, module in list(sys.modules.items()):
        own = name.partition(".")[0] == _OWN
        if module is None or not (own or name.partition(".")[0] in _FRAMEWORK):
            continue
        for attr, value in list(vars(module).items()):
            if (name, attr) in _MUTABLE or not (
                own or isinstance(value, (type, types.FunctionType))
            ):
                continue
            out.append((f"{name}.{attr}", module, attr, value, not own))
            if isinstance(value, types.FunctionType):
                out.append((f"{name}.{attr}.__code__", value, None, value.__code__, not own))
            elif isinstance(value, type) and getattr(value, "__module__", None) == name:
                out += _members(name, attr, value, own)
    return out


def _cells(fn: object, depth: int = 4) -> list[tuple[types.CellType, object]]:
    """The closure cells of `fn` and of the functions they hold, with their contents now."""
    out: list[tuple[types.CellType, object]] = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # not bound yet
            continue
        out.append((cell, contents))
        inner = getattr(contents, "__wrapped__", contents)  # an lru_cache'd function
        if depth and isinstance(inner, types.FunctionType):
            out += _cells(inner, depth - 1)
    return out


def _framework_dirs() -> tuple[str, ...]:
    files = [getattr(sys.modules.get(name), "__file__", None) for name in _FRAMEWORK]
    dirs = {os.path.dirname(p) + os.sep for f in files if f for p in (f, os.path.realpath(f))}
    return tuple(dirs)


def make_integrity(watch: object, places: object) -> Callable[[bool], list[str]]:
    """Snapshot now; `check(full)` says what differs since: with `full`, the framework
    too (once, at session end), else the grader's modules and the watch only (`watch` None:
    an unwatched run, where the profile function stays None)."""
    entries, dirs = _snapshot(), _framework_dirs()
    own = [e for e in entries if not e[4]]
    cells = _cells(watch)
    seen = dict(vars(places))
    _vars, _type, _len, _function, _code = vars, type, len, types.FunctionType, types.CodeType
    _getattr, _get_profile = getattr, sys.getprofile
    _thread_profile = getattr(threading, "getprofile", lambda: watch)

    def excused(value: object) -> bool:
        """A replacement pytest made itself: its code comes from a framework file."""
        code: Any = _getattr(_getattr(value, "__func__", value), "__code__", value)
        return _type(code) is _code and code.co_filename.startswith(dirs)

    def differs(entry: Entry) -> bool:
        _, holder, key, value, framework = entry
        try:
            now = holder.__code__ if key is None else _vars(holder).get(key, _MISSING)  # type: ignore[attr-defined]
        except Exception:
            return True
        return now is not value and not (framework and excused(now))

    def check(full: bool) -> list[str]:
        found = [e[0] for e in (entries if full else own) if differs(e)]
        found += ["the watch's closure" for cell, value in cells if cell.cell_contents is not value]
        now = _vars(places)
        if _len(now) != _len(seen) or any(now.get(k, _MISSING) is not v for k, v in seen.items()):
            found.append("the watch's places")
        if _get_profile() is not watch or _thread_profile() is not watch:
            found.append("the profile function")
        return found

    return check
