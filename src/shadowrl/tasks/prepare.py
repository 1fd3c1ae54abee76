"""Turning a task record into a buggy workspace and a test env, once, offline after.

`prepare(task, cache)` fetches the seed (a PyPI sdist via `pip download`, checked
against its sha256, or a local directory / git commit), applies `bug_patch`, removes
the files the hidden `test_patch` would create, and builds the test env. Everything
lands under the cache, keyed by content, and is built in a temporary directory then
renamed, so a workspace is either complete or absent. The prepared workspace is never
modified afterwards: it is both the root every sandbox starts from and the pristine
copy the grader restores test files from.
"""

from __future__ import annotations

import hashlib
import io
import json
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shadowrl.atomic import build_dir
from shadowrl.sandbox import Limits, Sandbox, create_sandbox
from shadowrl.tasks.env import build_env, env_python
from shadowrl.tasks.patch import apply_patch, created_paths, touched_paths
from shadowrl.tasks.runner import PLUGIN_DIR
from shadowrl.tasks.task import Seed, Task


class SeedError(RuntimeError):
    """The seed could not be fetched, verified or unpacked."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _pip_download(spec: str, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q"]
    proc = subprocess.run([*cmd, "-d", str(dest), spec], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SeedError(f"pip download {spec} failed:\n{proc.stderr[-2000:]}")
    (archive,) = dest.iterdir()
    return archive


def _store_sdist(spec: str, sha256: str | None, cache_dir: Path) -> Path:
    """Download `spec` into `cache/sdists/<sha256>/`; check the hash if one is given."""
    sdists = cache_dir / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=sdists) as download:
        archive = _pip_download(spec, Path(download))
        got = _sha256(archive)
        if sha256 is not None and got != sha256:
            raise SeedError(f"{spec}: sha256 mismatch (expected {sha256}, got {got})")

        def store(tmp: Path) -> None:
            tmp.mkdir()
            archive.replace(tmp / archive.name)

        slot = build_dir(sdists / got, store, complete=lambda p: any(p.glob("*")))
    return sorted(slot.glob("*"))[0]


def fetch_sdist(spec: str, sha256: str, cache_dir: Path) -> Path:
    """The sdist archive for `name==version`, downloaded once with pip and hash-checked."""
    slot = cache_dir / "sdists" / sha256
    found = sorted(slot.glob("*")) if slot.exists() else []
    return found[0] if found else _store_sdist(spec, sha256, cache_dir)


def pin_sdist(spec: str, cache_dir: str | Path) -> Seed:
    """Download `name==version` once and return a seed pinned to its sha256."""
    archive = _store_sdist(spec, None, Path(cache_dir).expanduser().resolve())
    return Seed(sdist=spec, sha256=archive.parent.name)


def _unpack(archive: Path, dest: Path) -> None:
    """Extract an sdist so its single top directory's contents land in `dest`."""
    staging = dest.with_name(dest.name + ".unpack")
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            z.extractall(staging)
    else:
        with tarfile.open(archive) as t:
            t.extractall(staging, filter="data")
    (top,) = staging.iterdir()
    top.rename(dest)
    staging.rmdir()


def _copy_path_seed(seed: Seed, dest: Path) -> None:
    src = Path(str(seed.path))
    if not seed.base_commit:
        shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return
    tar = subprocess.run(
        ["git", "-C", str(src), "archive", "--format=tar", seed.base_commit],
        capture_output=True,
        check=True,
    ).stdout
    dest.mkdir()
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(dest, filter="data")


def apply_patch_to_dir(root: Path, patch: str) -> None:
    """Apply `patch` to the files under `root` in place (None = the file is removed)."""
    files = {p: (root / p).read_text() for p in touched_paths(patch) if (root / p).is_file()}
    for path, text in apply_patch(files, patch).items():
        target = root / path
        if text is None:
            target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


def _build_atomically(final: Path, build: Callable[[Path], None]) -> Path:
    """`atomic.build_dir`, with the sdist's unpacking staging (`_unpack`) removed too."""

    def staged(tmp: Path) -> None:
        try:
            build(tmp)
        finally:
            shutil.rmtree(tmp.with_name(tmp.name + ".unpack"), ignore_errors=True)

    return build_dir(final, staged)
    return final


def seed_dir(seed: Seed, cache_dir: Path) -> Path:
    """The pristine seed tree (unpacked sdist or copied directory), built once."""
    if seed.path is not None and not Path(seed.path).is_dir():
        raise FileNotFoundError(
            f"the task's seed directory {seed.path} does not exist (a relative seed path is "
            "relative to its task file: keep the file beside its seeds, or copy it with "
            "`shadowrl tasks export --suite FILE --out NEW`, which copies them beside NEW)"
        )
    h = hashlib.sha256(json.dumps(seed.model_dump(), sort_keys=True).encode())
    if seed.path is not None and not seed.base_commit:  # a plain directory can change
        for f in sorted(Path(seed.path).rglob("*")):
            if f.is_file() and ".git" not in f.parts:
                h.update(str(f.relative_to(seed.path)).encode() + b"\0" + f.read_bytes())
    key = h.hexdigest()[:16]

    def build(tmp: Path) -> None:
        if seed.sdist is not None:
            _unpack(fetch_sdist(seed.sdist, str(seed.sha256), cache_dir), tmp)
        else:
            _copy_path_seed(seed, tmp)

    return _build_atomically(cache_dir / "seeds" / key, build)


def build_workspace(task: Task, cache_dir: Path) -> Path:
    """The buggy workspace of `task` (hidden tests removed), built once under the cache."""
    source = seed_dir(task.seed, cache_dir)
    blob = json.dumps([source.name, task.bug_patch, task.test_patch]).encode()
    key = f"{task.instance_id}-{hashlib.sha256(blob).hexdigest()[:12]}"

    def build(tmp: Path) -> None:
        shutil.copytree(source, tmp, symlinks=True)
        if task.bug_patch:
            apply_patch_to_dir(tmp, task.bug_patch)
        for path in created_paths(task.test_patch):
            (tmp / path).unlink(missing_ok=True)

    return _build_atomically(cache_dir / "workspaces" / key, build)


@dataclass(frozen=True)
class PreparedTask:
    """A task ready to run: its pristine buggy workspace and its test env."""

    task: Task
    workspace: Path
    env: Path

    @property
    def python(self) -> Path:
        return env_python(self.env)

    def read(self, path: str) -> str | None:
        """Pristine text of a workspace file (None if absent)."""
        data = self.read_bytes(path)
        return None if data is None else data.decode()

    def read_bytes(self, path: str) -> bytes | None:
        """Pristine bytes of a workspace file (None if absent or not a regular file)."""
        target = self.workspace / path
        return target.read_bytes() if target.is_file() and not target.is_symlink() else None

    def hidden_files(self) -> dict[str, str | None]:
        """What the hidden `test_patch` makes of each file it touches."""
        paths = touched_paths(self.task.test_patch)
        files = {p: text for p in paths if (text := self.read(p)) is not None}
        return apply_patch(files, self.task.test_patch)

    def sandbox(self, backend: str = "auto", limits: Limits | None = None) -> Sandbox:
        """A fresh root sandbox on the workspace, with the env read-only and first on PATH.

        The env stays at its host path inside, so `self.python` names the same
        interpreter on both sides (the grader runs it), and a plain `python` in the
        sandbox is the env's: the agent needs no host path in its prompt. The grader's
        pytest plugin directory is bound the same way, read-only.
        """
        env = str(self.env)
        binds = {env: self.env, str(PLUGIN_DIR): PLUGIN_DIR}  # the grader's pytest plugin
        return create_sandbox(self.workspace, backend, limits, ro_binds=binds, path=[f"{env}/bin"])


def prepare(task: Task, cache_dir: str | Path) -> PreparedTask:
    """Build (or reuse) the workspace and env of `task`."""
    cache = Path(cache_dir).expanduser().resolve()
    return PreparedTask(task, build_workspace(task, cache), build_env(task.env, cache))


def visible_test_command(task: Task) -> str:
    """The shell command that runs the task's visible tests, as the agent should type it."""
    return shlex.join([*task.test_cmd, "-q"])


def task_prompt(task: Task) -> str:
    """What the agent is told: the issue and the rules of the game.

    It depends on the task alone (eval suites hash it): `python` in the sandbox is
    the task env's, put first on PATH by `PreparedTask.sandbox`.
    """
    return (
        "You are working in a Python repository (the current directory).\n"
        "Fix the issue below by editing the source code. Do not modify or add tests:\n"
        "hidden tests are run after you submit, and test files are restored first.\n"
        f"You can run the visible tests with `{visible_test_command(task)}`.\n"
        "When the fix is done, call the `submit` tool.\n\n"
        f"<issue>\n{task.problem_statement.strip()}\n</issue>"
    )
