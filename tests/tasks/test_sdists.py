"""The sdist cache: an archive lands whole in its content-addressed slot or not at all.

pip's download (the network) is replaced by a copy of a local archive; the storing,
hashing and atomic placing under test are the real ones."""

from __future__ import annotations

import hashlib
import importlib
import tarfile
from pathlib import Path

import pytest

prepare = importlib.import_module("shadowrl.tasks.prepare")  # the package re-exports `prepare()`


@pytest.fixture
def downloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """pip download of `toy==1.0`, from an archive made here; returns the specs fetched."""
    src = tmp_path / "toy-1.0"
    src.mkdir()
    (src / "toy.py").write_text("x = 1\n")
    archive = tmp_path / "toy-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(src, arcname="toy-1.0")
    fetched: list[str] = []

    def download(spec: str, dest: Path) -> Path:
        fetched.append(spec)
        (dest / archive.name).write_bytes(archive.read_bytes())
        return dest / archive.name

    monkeypatch.setattr(prepare, "_pip_download", download)
    return fetched


def test_a_pinned_sdist_is_stored_by_its_hash_and_fetched_once(
    tmp_path: Path, downloads: list[str]
) -> None:
    cache = tmp_path / "cache"
    seed = prepare.pin_sdist("toy==1.0", cache)
    digest = hashlib.sha256((tmp_path / "toy-1.0.tar.gz").read_bytes()).hexdigest()
    assert seed.sha256 == digest
    stored = prepare.fetch_sdist("toy==1.0", digest, cache)  # the cache: no download
    assert stored == cache / "sdists" / digest / "toy-1.0.tar.gz" and downloads == ["toy==1.0"]
    assert [p.name for p in (cache / "sdists").iterdir()] == [digest]  # no temporary left
    assert (prepare.seed_dir(seed, cache) / "toy.py").read_text() == "x = 1\n"


def test_a_hash_mismatch_stores_nothing(tmp_path: Path, downloads: list[str]) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(prepare.SeedError, match="sha256 mismatch"):
        prepare.fetch_sdist("toy==1.0", "0" * 64, cache)
    assert list((cache / "sdists").iterdir()) == []
