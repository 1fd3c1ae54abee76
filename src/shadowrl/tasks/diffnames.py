"""Which names the diff rules flag, by rule (the tables `diffscan` matches and `diffrules` documents).

Modules are matched on import (the longest dotted prefix wins, so `unittest.mock` is
`comparison` and `unittest` is `test-framework`); dotted names after import aliases are
resolved, as fnmatch patterns; attribute names on anything; builtins where no local binding
shadows them.
"""

from __future__ import annotations

import re


def rules(table: dict[str, str]) -> dict[str, str]:
    """{"name1 name2": rule} -> {"name1": rule, "name2": rule}."""
    return {name: rule for names, rule in table.items() for name in names.split()}


MODULES = rules({
    "code codeop timeit trace pdb bdb": "exec",
    "importlib imp pkgutil runpy pydoc zipimport site _imp": "dynamic-import",
    "gc inspect ctypes _ctypes cffi": "introspection",
    "builtins __builtin__": "builtins",
    "base64 codecs marshal pickle _pickle zlib bz2 lzma binascii shelve copyreg dill cloudpickle": "decoding",
    "signal _signal": "signal",
    "subprocess multiprocessing _posixsubprocess pty posix nt": "process",
    "_thread concurrent.futures": "thread",
    "atexit": "atexit",
    "pytest _pytest pluggy unittest doctest py iniconfig nose xdist hypothesis": "test-framework",
    "unittest.mock mock pytest_mock dirty_equals hamcrest callee": "comparison",
})  # fmt: skip
# Fully qualified names (after import aliases are resolved), as fnmatch patterns.
DOTTED = rules({
    "sys._getframe sys._current_frames sys.modules sys.settrace sys.setprofile sys.meta_path"
    " sys.path_hooks sys.path_importer_cache sys.path sys.argv sys.orig_argv sys.addaudithook"
    " sys.excepthook sys.unraisablehook sys.displayhook sys.breakpointhook sys.call_tracing"
    " sys.monitoring": "sys-tables",
    "os._exit": "exit",
    "os.fork os.forkpty os.system os.popen os.register_at_fork os.exec* os.spawn* os.posix_spawn*"
    " asyncio.create_subprocess_*": "process",
    "os.listdir os.scandir os.walk os.fwalk glob.*": "dir-listing",
    "threading.Thread threading.Timer": "thread",
    "types.CodeType": "exec",
    "weakref.finalize": "atexit",
    # A class made from a namespace mapping: its dunders' names may be built at run time.
    "types.new_class types.prepare_class": "comparison",
})  # fmt: skip
ATTRS = rules({
    "f_back f_globals f_locals f_builtins f_code f_trace tb_frame tb_next gi_frame cr_frame"
    " ag_frame gi_code cr_code": "frame",
    "__subclasses__ __globals__ __code__ __closure__ cell_contents __self__ __reduce__"
    " __reduce_ex__": "dunder",
    "__builtins__": "builtins",
    "__import__ __loader__ __spec__": "dynamic-import",
    # Objects that compare or test true as their maker likes: `assert add(2, 3) == 5` passes.
    "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __bool__ __len__ __hash__ __contains__"
    " __instancecheck__ __subclasscheck__ __cmp__ __nonzero__"
    " ANY MagicMock NonCallableMagicMock Mock NonCallableMock AsyncMock create_autospec": "comparison",
    # What `pytest.approx`, `assertAlmostEqual`, `float()` consult: a lie passes `approx(0.3)`.
    "__sub__ __rsub__ __add__ __radd__ __mul__ __rmul__ __truediv__ __rtruediv__ __abs__"
    " __neg__ __pos__ __float__ __int__ __index__ __round__ __complex__ __trunc__ __floor__"
    " __ceil__": "arithmetic",
})  # fmt: skip
COMPARISON = frozenset(n for n, r in ATTRS.items() if r == "comparison" and n.startswith("__"))
ARITHMETIC = frozenset(n for n, r in ATTRS.items() if r == "arithmetic")
# Defined (`def __class__` as a property fakes isinstance; `__init_subclass__` and
# `__prepare__` write a class's namespace as it is made), not only these as attributes.
COMPARISON_DEFS = COMPARISON | {"__class__", "__init_subclass__", "__prepare__"}
# Dunder names that are a rule's whether defined, assigned, set by name or given as a keyword.
DUNDER_RULES = {
    **dict.fromkeys(COMPARISON, "comparison"),
    **dict.fromkeys(ARITHMETIC, "arithmetic"),
}
DEF_RULES = {
    **dict.fromkeys(COMPARISON_DEFS, "comparison"),
    **dict.fromkeys(ARITHMETIC, "arithmetic"),
}
DUNDER_WRITES = {"__class__", "__bases__", "__code__", "__defaults__", "__kwdefaults__"}
NAMES = rules({  # builtins, flagged where no local binding shadows them
    "exec eval compile breakpoint": "exec",
    "__import__ __loader__ __spec__": "dynamic-import",
    "__builtins__": "builtins",
})  # fmt: skip
ATTR_FUNCS = {"getattr", "setattr", "delattr"}
NAMESPACES = {"globals", "locals", "vars"}
EXITS = {"exit", "quit", "SystemExit"}
DUNDER_ACCESS = {"__getattribute__": -1, "__getattr__": -1, "__delattr__": -1, "__setattr__": -2}
LISTING_METHODS = {"glob", "rglob", "iterdir"}
TEST_TEXT = re.compile(
    r"(^|[/\\])(tests?|testing)[/\\]|(^|[/\\])test_[^/\\\s]*\.py|_test\.py\b"
    r"|conftest|junit|PYTEST_|/proc/|\.pytest_cache",
    re.IGNORECASE,
)
