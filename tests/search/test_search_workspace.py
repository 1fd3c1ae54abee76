"""Reading workspaces into `{path: text}`, and a fork's changes into `updated` input."""

from pathlib import Path

from conftest import WORKSPACE

from shadowrl.sandbox import ExecResult, Snapshot
from shadowrl.search import SemanticIndex, changed_texts, directory_texts, sandbox_texts


class DictSandbox:
    """An in-memory stand-in for the sandbox side of the interface."""

    backend = "dict"

    def __init__(self, root: dict[str, bytes]) -> None:
        self.root = dict(root)
        self.files = dict(root)

    def exec(self, cmd: str, timeout: float = 30.0) -> ExecResult:
        raise NotImplementedError

    def read_file(self, path: str | Path) -> bytes:
        return self.files[str(path)]

    def write_file(self, path: str | Path, data: str | bytes) -> None:
        self.files[str(path)] = data.encode() if isinstance(data, str) else data

    def remove(self, path: str) -> None:
        del self.files[path]

    def list_files(self) -> list[str]:
        return sorted(self.files)

    def changed_files(self) -> list[str]:
        paths = set(self.files) | set(self.root)
        return sorted(p for p in paths if self.files.get(p) != self.root.get(p))

    def snapshot(self) -> Snapshot:
        raise NotImplementedError

    def close(self) -> None:
        pass


def test_directory_texts_skips_tool_dirs_binaries_and_huge_files(tmp_path):
    for rel, data in {
        "src/a.py": b"x = 1\n",
        "README.md": b"# hi\n",
        ".git/config": b"[core]\n",
        "src/__pycache__/a.cpython-311.pyc": b"\x00\x01",
        "pkg.egg-info/PKG-INFO": b"Name: pkg\n",
        "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
        "latin1.txt": "caf\xe9".encode("latin-1"),
        "big.txt": b"x" * 2000,
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    assert directory_texts(tmp_path, max_bytes=1000) == {
        "README.md": "# hi\n",
        "src/a.py": "x = 1\n",
    }


def test_fork_changes_feed_updated(hashed):
    sandbox = DictSandbox({p: t.encode() for p, t in WORKSPACE.items()})
    index = SemanticIndex.build(sandbox_texts(sandbox), hashed)
    sandbox.write_file("app/dates.py", "def parse_timestamp(s):\n    return int(s)\n")
    sandbox.write_file("app/new.py", "def rotate_logs():\n    pass\n")
    sandbox.write_file("README.md", b"\x00binary now")
    sandbox.remove("app/mail.py")
    changed = changed_texts(sandbox, index.paths)
    assert changed == {
        "app/dates.py": "def parse_timestamp(s):\n    return int(s)\n",
        "app/new.py": "def rotate_logs():\n    pass\n",
        "README.md": None,
        "app/mail.py": None,
    }
    fork = index.updated(changed)
    assert fork.paths == ["app/dates.py", "app/integrity.py", "app/new.py"]
    assert fork.search("rotate logs", k=1)[0].symbol == "rotate_logs"


def test_reverted_snapshot_change_is_noticed_with_also_check(hashed):
    sandbox = DictSandbox({p: t.encode() for p, t in WORKSPACE.items()})
    sandbox.write_file("app/dates.py", "def prepared():\n    pass\n")  # task preparation
    prepared = sandbox.changed_files()
    index = SemanticIndex.build(sandbox_texts(sandbox), hashed)
    sandbox.write_file("app/dates.py", WORKSPACE["app/dates.py"])  # the fork reverts it
    assert changed_texts(sandbox, index.paths) == {}
    changed = changed_texts(sandbox, index.paths, also_check=prepared)
    assert changed == {"app/dates.py": WORKSPACE["app/dates.py"]}
    assert index.updated(changed).search("parse date", k=1)[0].symbol == "parse_date"
