"""Isolated, forkable workspaces: `create_sandbox(workspace, backend="auto")`.

    overlay  namespaces + overlayfs + seccomp + cgroups; O(1) snapshot/fork (`overlay.py`)
    local    a copied directory and a plain subprocess; isolates nothing (`local.py`)

"auto" picks `overlay` where the machine allows it and otherwise falls back to
`local` with a loud warning.

This module is the package's one entry: code outside `sandbox/` imports only from here
(`tests/test_entry_modules.py`). Besides the factory it gives the configs (`SandboxConfig`,
`Limits`, `PoolConfig`), the protocols (`Sandbox`, `Snapshot`), the warm pool of started
forks (`WarmPool`), `list_files`, the host-side listing that never follows a symlink, and
`sweep_orphans`, which unmounts the stores of processes that died (scripts call it after
killing a run).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from shadowrl.sandbox.base import (
    ExecResult,
    Limits,
    PoolConfig,
    Sandbox,
    SandboxConfig,
    Snapshot,
)
from shadowrl.sandbox.fsview import list_files
from shadowrl.sandbox.layers import sweep_orphans
from shadowrl.sandbox.pool import WarmPool

__all__ = [
    "BACKENDS", "ExecResult", "Limits", "PoolConfig", "Sandbox", "SandboxConfig", "Snapshot",
    "WarmPool", "create_sandbox", "list_files", "sweep_orphans",
]  # fmt: skip

log = logging.getLogger(__name__)


def _overlay(workspace: Path, limits: Limits, **kw: object) -> Sandbox:
    from shadowrl.sandbox.overlay import OverlaySandbox

    return OverlaySandbox.create(workspace, limits, **kw)  # type: ignore[arg-type]


def _local(workspace: Path, limits: Limits, **kw: object) -> Sandbox:
    from shadowrl.sandbox.local import LocalSandbox

    return LocalSandbox.create(workspace, limits, **kw)  # type: ignore[arg-type]


BACKENDS: dict[str, Callable[..., Sandbox]] = {"overlay": _overlay, "local": _local}


def _auto(workspace: Path, limits: Limits, **kw: object) -> Sandbox:
    from shadowrl.sandbox.overlay import unavailable_reason

    reason = unavailable_reason()
    if reason is None:
        try:
            return _overlay(workspace, limits, **kw)
        except OSError as e:
            reason = str(e)
    log.warning("overlay sandbox unavailable (%s); FALLING BACK TO 'local', NO ISOLATION", reason)
    return _local(workspace, limits, **kw)


def create_sandbox(
    workspace: str | Path,
    backend: str = "auto",
    limits: Limits | None = None,
    *,
    extra_ro_layers: Sequence[Path] = (),
    ro_binds: Mapping[str, Path] | None = None,
    workdir: str = "/workspace",
    squash_depth: int = 32,
    path: Sequence[str] = (),
) -> Sandbox:
    """A sandbox whose workspace starts as a copy-on-write view of `workspace`.

    `workspace` is never modified. `extra_ro_layers` are stacked beneath it (e.g. files
    the task adds); `ro_binds` maps an absolute path inside the sandbox to a host dir
    mounted read-only there (e.g. a prepared virtualenv). Commands run in `workdir`.
    `squash_depth` bounds how many snapshot layers stack up before they are merged.
    `path` lists dirs (as seen inside the sandbox) put in front of every exec's PATH,
    so a bound env's `python` wins over the system one; forks keep them.
    """
    if backend != "auto" and backend not in BACKENDS:
        raise ValueError(f"unknown sandbox backend {backend!r}; choose from {[*BACKENDS, 'auto']}")
    bad = [d for d in path if not d.startswith("/") or ":" in d]
    if bad:
        raise ValueError(f"sandbox path dirs must be absolute and free of ':': {bad}")
    make = _auto if backend == "auto" else BACKENDS[backend]
    return make(
        Path(workspace), limits or Limits.model_validate({}), extra_ro_layers=extra_ro_layers,
        ro_binds=ro_binds, workdir=workdir, squash_depth=squash_depth, path=tuple(path),
    )  # fmt: skip
