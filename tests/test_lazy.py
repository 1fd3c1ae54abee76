"""Lazily re-exporting packages: the names the type checker sees are the names served.

Each such `__init__` lists its names twice, once under `TYPE_CHECKING` for the type
checker and once in `_WHERE` for `shadowrl.lazy.exports`; these tests keep the two equal,
check every name is the object its module defines, and that loading the config tree,
the reason for laziness, still imports no torch.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

LAZY = ["experiments", "inference", "pipeline", "realtime", "rl"]


def _typed(package: str) -> dict[str, str]:
    """name -> module of the imports under `if TYPE_CHECKING:` in the package's __init__."""
    init = importlib.import_module(f"shadowrl.{package}").__file__
    assert init is not None
    found: dict[str, str] = {}
    for node in ast.parse(Path(init).read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module is not None
                for alias in imp.names:
                    assert alias.asname == alias.name, "re-export as itself"
                    found[alias.name] = imp.module.removeprefix(f"shadowrl.{package}.")
    return found


@pytest.mark.parametrize("package", LAZY)
def test_the_typed_names_are_the_served_names(package: str) -> None:
    module = importlib.import_module(f"shadowrl.{package}")
    assert _typed(package) == module._WHERE
    assert module._WHERE, "a lazy package exports something"


@pytest.mark.parametrize("package", LAZY)
def test_every_name_is_its_modules_object(package: str) -> None:
    module = importlib.import_module(f"shadowrl.{package}")
    for name, where in module._WHERE.items():
        defining = importlib.import_module(f"shadowrl.{package}.{where}")
        assert getattr(module, name) is getattr(defining, name), name
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = module.no_such_name


@pytest.mark.parametrize("package", LAZY)
def test_no_name_is_a_submodules_name(package: str) -> None:
    """Importing a submodule binds its name on the package, shadowing an export of that name."""
    module = importlib.import_module(f"shadowrl.{package}")
    submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module._WHERE)


def test_loading_the_config_tree_imports_no_torch() -> None:
    code = (
        "import sys, shadowrl.commands.config; print(sorted({'torch', 'ray'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
