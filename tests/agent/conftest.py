"""Shared fixtures: the real SmolLM2 tokenizer (cached) and a sandbox on a temp copy."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadowrl.agent.demo import DEMO_DIR
from shadowrl.sandbox.base import ExecResult


class DirSandbox:
    backend = "dir"

    def __init__(self, root: Path):
        self.root = root
        self.original = {p: (root / p).read_bytes() for p in self.list_files()}

    def exec(self, cmd: str, timeout: float = 30.0) -> ExecResult:
        try:
            p = subprocess.run(
                cmd, shell=True, cwd=self.root, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return ExecResult(-9, "", "", timed_out=True)
        return ExecResult(p.returncode, p.stdout, p.stderr)

    def read_file(self, path: str | Path) -> bytes:
        return (self.root / path).read_bytes()

    def write_file(self, path: str | Path, data: str | bytes) -> None:
        f = self.root / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data.encode() if isinstance(data, str) else data)

    def list_files(self) -> list[str]:
        return sorted(
            p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file()
        )

    def changed_files(self) -> list[str]:
        now = set(self.list_files())
        return sorted(
            p
            for p in now | set(self.original)
            if p not in now or p not in self.original or self.read_file(p) != self.original[p]
        )

    def snapshot(self):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def close(self) -> None:
        pass


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    from shadowrl.models import load_tokenizer

    return load_tokenizer("smollm2")


@pytest.fixture
def demo_sandbox(tmp_path: Path) -> Iterator[Any]:
    shutil.copytree(DEMO_DIR / "repo", tmp_path / "ws")
    sb = DirSandbox(tmp_path / "ws")
    yield sb
    sb.close()
