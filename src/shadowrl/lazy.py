"""A package's names, imported from their modules on first use (PEP 562).

Code outside a package imports from the package itself, never from its modules
(`tests/test_entry_modules.py`). A package whose modules pull in torch or Ray cannot
re-export them eagerly: its `config` module is loaded with every command's config tree,
and loading it runs the package's `__init__`. Such an `__init__` lists where each name
lives and installs `exports(...)` as its `__getattr__`, so `from shadowrl.rl import
Trainer` imports `rl/trainer.py` then and not at config load. The same names are imported
under `TYPE_CHECKING` for the type checker; `tests/test_lazy.py` keeps the two lists equal.
Imports nothing of the project: every layer may use it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def exports(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A module-level `__getattr__` for `package`: name -> the module (relative) defining it."""

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
