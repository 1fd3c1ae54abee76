"""The patch parser reads what `git diff` itself writes, on real repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shadowrl.tasks.patch import (
    PatchError,
    apply_patch,
    created_paths,
    make_patch,
    parse_patch,
    touched_paths,
)

BASE = {
    "keep.py": "x = 1\n",
    "tail.txt": "one\ntwo",  # no final newline
    "gone.py": "def f():\n    return 1\n",
    "empty_gone.txt": "",
    "moved.py": "".join(f"line {i}\n" for i in range(20)),
    "edited_move.py": "".join(f"row {i}\n" for i in range(20)),
    "tool.sh": "echo hi\n",
    "feed.py": "a = 1\n\x0c\nb = 2\n",  # a form feed is not a line break
}


def _git(root: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.quotepath=true"]
    return subprocess.run([*cmd, *args], cwd=root, capture_output=True, check=True).stdout.decode()


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for path, text in files.items():
        (root / path).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return root


def _diff(root: Path, *flags: str) -> str:
    _git(root, "add", "-A")
    return _git(root, "diff", "--cached", "-M", *flags)


def _applied(before: dict[str, str], patch: str) -> dict[str, str]:
    files = dict(before)
    for path, text in apply_patch(before, patch).items():
        if text is None:
            files.pop(path, None)
        else:
            files[path] = text
    return files


def test_every_kind_of_text_change_git_writes_applies(tmp_path: Path) -> None:
    root = _repo(tmp_path, BASE)
    (root / "tail.txt").write_text("one\nTWO")  # both sides lack the final newline
    (root / "keep.py").write_text("x = 2")  # the new side loses it
    (root / "gone.py").unlink()
    (root / "empty_gone.txt").unlink()
    (root / "new.py").write_text("print('new')\n")
    (root / "empty_new.txt").write_text("")
    (root / "moved.py").rename(root / "renamed.py")  # a pure rename: no hunk
    (root / "edited_move.py").rename(root / "edited_moved.py")
    (root / "edited_moved.py").write_text(BASE["edited_move.py"].replace("row 3\n", "ROW 3\n"))
    (root / "tool.sh").chmod(0o755)  # a mode change alone
    (root / "feed.py").write_text(BASE["feed.py"].replace("b = 2", "b = 3"))
    (root / "with space é.py").write_text("y = 1\n")  # git quotes this name
    after = _tree(root)
    patch = _diff(root)
    for marker in ("\\ No newline", "rename from", "similarity index 100%", "new mode", '"b/'):
        assert marker in patch
    assert _applied(BASE, patch) == after
    assert set(touched_paths(patch)) == set(BASE) ^ set(after) | {
        "tail.txt", "keep.py", "tool.sh", "feed.py", "edited_move.py", "moved.py"
    }  # fmt: skip
    assert sorted(created_paths(patch)) == sorted(set(after) - set(BASE))


def test_reversed_git_diff_undoes_it(tmp_path: Path) -> None:
    root = _repo(tmp_path, BASE)
    (root / "tail.txt").write_text("one\ntwo\nthree\n")  # the old side lacks the newline
    (root / "gone.py").unlink()
    after = _tree(root)
    _git(root, "add", "-A")
    reverse = _git(root, "diff", "--cached", "-R")
    assert _applied(after, reverse) == BASE


def test_copies_keep_their_source(tmp_path: Path) -> None:
    root = _repo(tmp_path, BASE)
    (root / "copy.py").write_text(BASE["moved.py"])
    patch = _diff(root, "-C", "--find-copies-harder")
    assert "copy from moved.py" in patch
    assert _applied(BASE, patch) == {**BASE, "copy.py": BASE["moved.py"]}


def test_binary_patches_are_refused_with_their_line(tmp_path: Path) -> None:
    root = _repo(tmp_path, BASE)
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    (root / "keep.py").write_text("x = 3\n")
    plain, full = _diff(root), _diff(root, "--binary")
    for patch in (plain, full):
        line = next(i for i, ln in enumerate(patch.splitlines(), 1) if "inary" in ln)
        with pytest.raises(PatchError, match=f"patch line {line}: binary patch for blob.bin"):
            parse_patch(patch)


@pytest.mark.parametrize(
    ("patch", "line", "what"),
    [
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n?b\n", 5, "bad hunk line"),
        ("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n", 4, "patch ends inside a hunk"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n", 6, None),  # an extra '+c' line is text
        ("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ bad @@\n", 4, "bad hunk header"),
        ("--- /dev/null\n+++ /dev/null\n", 1, "both sides are /dev/null"),
    ],
)
def test_malformed_patches_name_their_line(patch: str, line: int, what: str | None) -> None:
    if what is None:
        assert apply_patch({"x": "a\n"}, patch) == {"x": "b\n"}
        return
    with pytest.raises(PatchError, match=f"patch line {line}: {what}"):
        parse_patch(patch)


def test_make_patch_round_trips_missing_final_newlines() -> None:
    before = {"a.txt": "x\ny", "b.txt": "p\n"}
    after = {"a.txt": "x\nz\n", "b.txt": "p\nq"}
    assert apply_patch(before, make_patch(before, after)) == after
