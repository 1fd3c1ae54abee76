"""The real workspaces agent sessions start from, and the one place their work lands back.

A session never runs in the user's directory. `take_snapshot` checks the requested
path (it must resolve, symlinks followed, inside `serve.workspaces_root`; `..` is
refused outright) and copies it, or a git commit of it (`git archive`), into a
private directory: the sandbox is built on that copy, and the copy is the baseline
of the session's diff. `.git` and tool caches are not copied.

`ContentHasher` gives the content hash the trace store keeps for a session's starting
workspace and for the workspace after every step (what branching checks a rebuilt
sandbox against, `realtime/branch.py`).

`apply_changes` is the user's explicit accept: it writes the files the session
changed into the real workspace, refused (`WorkspaceChanged`, a 409) unless the
workspace is as it was when the session started: the same fingerprint (every file's
path and bytes) and, for a commit, each changed file still as in that commit.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from shadowrl.sandbox import Sandbox, list_files
from shadowrl.tasks import make_patch

SKIPPED_DIRS = frozenset(
    {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv"}
)


class WorkspaceError(ValueError):
    """A workspace the request may not use (outside the root, missing, not a repo): a 400."""


class WorkspaceChanged(RuntimeError):
    """The real workspace changed since the session started: apply is refused (409)."""


@dataclass(frozen=True)
class Snapshot:
    """A session's private copy of its workspace, and what the real one looked like."""

    source: Path  # the real workspace (resolved)
    copy: Path  # the private copy the sandbox starts from
    commit: str | None
    fingerprint: str

    @property
    def label(self) -> str:
        return f"{self.source}@{self.commit}" if self.commit else str(self.source)


def resolve_workspace(root: Path, requested: str) -> Path:
    """`requested` (absolute, or relative to `root`) as a directory inside `root`."""
    if ".." in Path(requested).parts:
        raise WorkspaceError("workspace: '..' is not allowed")
    base = root.resolve()
    path = Path(requested) if Path(requested).is_absolute() else base / requested
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as e:
        raise WorkspaceError(f"workspace {requested!r} does not exist") from e
    if real != base and base not in real.parents:
        raise WorkspaceError(f"workspace {requested!r} is outside serve.workspaces_root")
    if not real.is_dir():
        raise WorkspaceError(f"workspace {requested!r} is not a directory")
    return real


def files(top: Path) -> Iterator[str]:
    """Relative paths of the regular files and symlinks under `top`, caches skipped, sorted."""
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        here = Path(dirpath)
        for name in sorted(filenames):
            yield str((here / name).relative_to(top))


def fingerprint(top: Path) -> str:
    """A hash of every file's path and bytes (a symlink by its target) under `top`."""
    h = hashlib.sha256()
    for rel in files(top):
        p = top / rel
        data = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


def _is_cache(path: str) -> bool:
    return path.endswith(".pyc") or bool(SKIPPED_DIRS.intersection(path.split("/")[:-1]))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ContentHasher:
    """The content hash of a sandbox's workspace: sha256 over every regular file's path
    and sha256, sorted by path. Caches (`SKIPPED_DIRS`, `*.pyc`: bytecode embeds source
    mtimes, so two faithful runs differ there) and symlinks (`Sandbox.list_files` lists
    regular files only) are left out. The starting copy is hashed once, file by file;
    after that only `changed_files()` are read, so a step costs what it changed, plus
    the backend's change scan (the overlay reads its upper layers; `local` compares files).
    """

    def __init__(self, base: Path) -> None:
        listed = (p for p in list_files(base) if not _is_cache(p))
        self.base = {p: _digest((base / p).read_bytes()) for p in listed}

    @staticmethod
    def combine(digests: Mapping[str, str]) -> str:
        h = hashlib.sha256()
        for path in sorted(digests):
            h.update(f"{path}\0{digests[path]}\n".encode())
        return h.hexdigest()

    def start(self) -> str:
        """The hash of the starting copy."""
        return self.combine(self.base)

    def of(self, sandbox: Sandbox) -> str:
        """The hash of `sandbox`'s workspace now (it must have started from the base copy)."""
        now = dict(self.base)
        for path in sandbox.changed_files():
            if _is_cache(path):
                continue
            try:
                now[path] = _digest(sandbox.read_file(path))
            except FileNotFoundError:
                now.pop(path, None)
            except OSError as e:  # unreadable now (e.g. chmod 000): still a state of its own
                now[path] = f"unreadable:{e.errno}"
        return self.combine(now)


def take_snapshot(root: Path, requested: str, commit: str | None, into: Path) -> Snapshot:
    """Copy workspace `requested` (or its git `commit`) into the new directory `into`."""
    source = resolve_workspace(root, requested)
    if commit is None:
        ignore = shutil.ignore_patterns(*SKIPPED_DIRS)
        shutil.copytree(source, into, symlinks=True, ignore=ignore)
    else:
        _git_export(source, commit, into)
    return Snapshot(source, into, commit, fingerprint(source))


def reopen(label: str, into: Path) -> Snapshot:
    """A fresh copy of a recorded session's workspace, by its label (`path[@commit]`):
    a commit comes back exactly; a plain directory comes back as it is now."""
    source, _, commit = label.partition("@")
    return take_snapshot(Path(source), source, commit or None, into)


def _git_export(repo: Path, commit: str, into: Path) -> None:
    if commit.startswith("-"):
        raise WorkspaceError(f"commit {commit!r} is not a revision")
    proc = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", f"{commit}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
        raise WorkspaceError(f"workspace {repo} has no commit {commit!r}: {err[0]}")
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(into, filter="data")


def changes(sandbox: Sandbox, snap: Snapshot) -> dict[str, bytes | None]:
    """What the session changed: new bytes of each changed file (None: deleted)."""
    present = set(sandbox.list_files())
    out: dict[str, bytes | None] = {}
    for path in sandbox.changed_files():
        if path.endswith(".pyc") or SKIPPED_DIRS.intersection(path.split("/")[:-1]):
            continue
        out[path] = sandbox.read_file(path) if path in present else None
    return out


def diff_of(changed: Mapping[str, bytes | None], snap: Snapshot) -> str:
    """The changes as a git-style unified diff against the snapshot."""
    before = {p: _text(snap.copy / p) for p in changed}
    after = {p: None if b is None else b.decode(errors="replace") for p, b in changed.items()}
    return make_patch(before, after)


def _text(path: Path) -> str | None:
    return path.read_text(errors="replace") if path.is_file() else None


def apply_changes(snap: Snapshot, changed: Mapping[str, bytes | None]) -> list[str]:
    """Write `changed` into the real workspace (see the module docstring); the paths."""
    if fingerprint(snap.source) != snap.fingerprint:
        raise WorkspaceChanged(f"{snap.source} changed since the session started")
    for path in changed:
        real, base = snap.source / path, snap.copy / path
        parent = real.parent.resolve()
        if parent != snap.source and snap.source not in parent.parents:
            raise WorkspaceChanged(f"{path} leads outside {snap.source}")
        now = real.read_bytes() if real.is_file() else None
        then = base.read_bytes() if base.is_file() else None
        if now != then:
            raise WorkspaceChanged(f"{path} in {snap.source} differs from the session's start")
    for path, data in changed.items():
        real = snap.source / path
        if data is None:
            real.unlink(missing_ok=True)
        else:
            real.parent.mkdir(parents=True, exist_ok=True)
            real.write_bytes(data)
    return sorted(changed)
