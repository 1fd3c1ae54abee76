"""The one atomic-write helper: whole files, secret modes, directories built once or
committed, files on an fsspec store; and no other module renames a file into place."""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from shadowrl.atomic import build_dir, commit_dir, write_file, write_json, write_via


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_json(path, {"step": 1})

    class Boom(str):
        def encode(self, *a, **k):  # fails after the temporary file exists
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_file(path, Boom("x"))
    assert path.read_text() == '{\n "step": 1\n}'
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_a_secret_is_never_readable_by_others(tmp_path: Path) -> None:
    path = write_file(tmp_path / "keys.json", "secret", mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    plain = write_file(tmp_path / "plain.txt", b"x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~umask


def test_build_dir_builds_once_and_keeps_a_race_winners_copy(tmp_path: Path) -> None:
    final, calls = tmp_path / "cache" / "env", []

    def build(tmp: Path) -> None:
        calls.append(tmp)
        tmp.mkdir()
        (tmp / "done").write_text("mine")

    assert build_dir(final, build) == final and (final / "done").read_text() == "mine"
    build_dir(final, build)
    assert len(calls) == 1  # complete: never rebuilt

    other = tmp_path / "cache" / "raced"

    def lose(tmp: Path) -> None:  # another writer finishes first
        tmp.mkdir()
        (tmp / "done").write_text("loser")
        other.mkdir()
        (other / "done").write_text("winner")

    complete = lambda p: (p / "done").exists()  # noqa: E731
    build_dir(other, lose, complete=complete)
    assert (other / "done").read_text() == "winner"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["env", "raced"]


def test_a_failed_build_leaves_nothing(tmp_path: Path) -> None:
    def broken(tmp: Path) -> None:
        tmp.mkdir()
        raise OSError("pip failed")

    with pytest.raises(OSError, match="pip failed"):
        build_dir(tmp_path / "env", broken)
    assert list(tmp_path.iterdir()) == []


def test_commit_dir_replaces_the_old_directory_and_leaves_no_temporary(tmp_path: Path) -> None:
    final = tmp_path / "step_00000001"
    final.mkdir()
    (final / "old.bin").write_bytes(b"old")
    tmp = tmp_path / ".tmp-step_00000001"
    tmp.mkdir()
    (tmp / "model.safetensors").write_bytes(b"new")
    assert commit_dir(tmp, final) == final
    assert [p.name for p in final.iterdir()] == ["model.safetensors"]
    assert (final / "model.safetensors").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000001"]


@pytest.mark.parametrize("protocol", ["memory", "file"])
def test_write_via_an_fsspec_store_shows_only_the_whole_file(tmp_path: Path, protocol: str) -> None:
    fs = fsspec.filesystem(protocol)
    root = f"/atomic-{os.getpid()}" if protocol == "memory" else str(tmp_path)
    write_via(fs, f"{root}/v1/manifest.json", '{"v": 1}')
    write_via(fs, f"{root}/v1/manifest.json", b'{"v": 2}')  # replaced, not appended
    with fs.open(f"{root}/v1/manifest.json", "rb") as f:
        assert f.read() == b'{"v": 2}'
    assert [p.rsplit("/", 1)[1] for p in fs.ls(f"{root}/v1", detail=False)] == ["manifest.json"]
    if protocol == "memory":
        fs.rm(root, recursive=True)


MOVES = {("os", "replace"), ("os", "rename"), ("shutil", "move")}
# a rename that moves a finished file or directory inside a build's own temporary
# directory (not into place): allowed where it is named here, with the reason
INSIDE_A_BUILD = {
    ("tasks/prepare.py", "top.rename(dest)"),  # an sdist's top directory, inside build_dir's
    ("tasks/prepare.py", "archive.replace(tmp / archive.name)"),  # into build_dir's tmp
}


def _moves(tree: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(f := node.func, ast.Attribute):
            owner = f.value.id if isinstance(f.value, ast.Name) else None
            if (owner, f.attr) in MOVES or f.attr in ("rename", "mv"):
                yield node
            elif f.attr == "replace" and len(node.args) == 1 and not node.keywords:
                yield node  # Path.replace(target); str.replace takes two arguments


def test_every_rename_into_place_goes_through_atomic_py() -> None:
    src = Path(__file__).parents[1] / "src" / "shadowrl"
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel == "atomic.py" or rel.startswith("data/"):
            continue
        text = path.read_text()
        for call in _moves(ast.parse(text)):
            if (rel, ast.get_source_segment(text, call)) not in INSIDE_A_BUILD:
                found.append(f"{rel}:{call.lineno}: {ast.get_source_segment(text, call)}")
    assert not found, "a hand-rolled atomic write; use shadowrl.atomic:\n" + "\n".join(found)
