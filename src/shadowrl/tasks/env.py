"""Python environments for running a task's tests, built once and shared read-only.

Every distinct `Task.env` (a list of pip requirements) becomes one virtualenv made
from the system interpreter, keyed by a hash of its contents, so a suite of 164
tasks needing `pytest` builds one env, not 164. Building happens at preparation
time, when the network is allowed; sandboxes then get the env as a read-only path
and run `<env>/bin/python -m pytest` with no network. A build goes to a temporary
directory and is renamed into place, so a crash or a concurrent builder never
leaves a half-installed env that later runs would trust.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from shadowrl.atomic import build_dir

SYSTEM_PYTHON = "/usr/bin/python3"
MODULES_FILE = "shadowrl-modules.json"  # top-level importable names, for the grader


class EnvBuildError(RuntimeError):
    """venv creation or pip install failed."""


def env_key(requirements: Sequence[str], python: str = SYSTEM_PYTHON) -> str:
    """Content hash of an env: the interpreter plus the sorted requirement lines."""
    blob = json.dumps([python, sorted(r.strip() for r in requirements)]).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def env_python(env_dir: Path) -> Path:
    """The interpreter inside an env (a symlink into the system Python, never copied)."""
    return env_dir / "bin" / "python"


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise EnvBuildError(f"{what} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


def _site_packages(env_dir: Path) -> Path:
    return next((env_dir / "lib").glob("python3*/site-packages"))


def _record_modules(env_dir: Path) -> None:
    """Names importable from the env; agent files shadowing them are dropped when grading."""
    names = set(sys.stdlib_module_names)
    for entry in _site_packages(env_dir).iterdir():
        if entry.suffix in (".dist-info", ".egg-info", ".pth") or entry.name.startswith("_"):
            continue
        names.add(entry.name.split(".", 1)[0] if entry.is_file() else entry.name)
    names.update({"_pytest", "pytest", "py", "pluggy"})
    (env_dir / MODULES_FILE).write_text(json.dumps(sorted(names)))


def build_env(
    requirements: Sequence[str], cache_dir: str | Path, python: str = SYSTEM_PYTHON
) -> Path:
    """Return the env for `requirements`, building it under `cache_dir/envs` if missing."""
    root = Path(cache_dir).expanduser() / "envs"
    final = root / env_key(requirements, python)

    def build(
        tmp: Path,
    ) -> None:  # renamed into place after: venvs work moved when run as `bin/python -m`
        _run([python, "-m", "venv", str(tmp)], "venv")
        if requirements:
            pip = [str(env_python(tmp)), "-m", "pip", "install", "--no-input", "-q"]
            _run([*pip, "--disable-pip-version-check", *requirements], "pip install")
        _record_modules(tmp)

    return build_dir(final, build, complete=lambda p: (p / MODULES_FILE).exists())


def env_modules(env_dir: Path) -> frozenset[str]:
    """Top-level module names the env provides (stdlib included)."""
    return frozenset(json.loads((env_dir / MODULES_FILE).read_text()))
