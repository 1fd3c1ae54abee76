"""The one atomic-write helper: whole files, secret modes, directories built once."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from shadowrl.atomic import build_dir, write_file, write_json


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
