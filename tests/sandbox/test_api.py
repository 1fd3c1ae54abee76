"""The Sandbox protocol, checked on every backend: exec, files, snapshot, fork, cleanup."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from shadowrl.sandbox import Limits, Sandbox, create_sandbox

from .conftest import BACKENDS, tree_digest


def test_exec_runs_in_workspace(sandbox: Sandbox) -> None:
    res = sandbox.exec("cat README.md; echo err >&2; exit 3")
    assert (res.exit_code, res.stdout, res.stderr) == (3, "# demo\n", "err\n")
    assert not res.timed_out and not res.truncated
    assert sandbox.exec("python3 -c 'print(6 * 7)'").stdout == "42\n"


def test_an_edit_is_seen_by_the_next_import(sandbox: Sandbox) -> None:
    """An edit of the same size in the same second as the last import is seen: CPython
    validates a cached .pyc by the source's whole-second mtime and size, so with bytecode
    written an agent's re-run of its check would import the code it just replaced."""
    run = "python3 -c 'import m; print(m.X)'"
    sandbox.write_file("m.py", b"X = 1\n")
    assert sandbox.exec(run).stdout == "1\n"
    sandbox.write_file("m.py", b"X = 2\n")
    assert sandbox.exec(run).stdout == "2\n"
    assert "__pycache__/m.cpython" not in sandbox.exec("ls -R").stdout


def test_timeout_kills_everything(sandbox: Sandbox) -> None:
    res = sandbox.exec("sleep 30 & sleep 30", timeout=0.5)
    assert res.timed_out and res.exit_code == 124
    again = sandbox.exec("echo alive")
    assert again.stdout == "alive\n"


def test_output_is_capped(sandbox: Sandbox) -> None:
    res = sandbox.exec("head -c 300000 /dev/zero | tr '\\0' a; echo tail >&2")
    assert res.truncated and res.stdout == "a" * 1000 and res.stderr == "tail\n"


def test_read_write_roundtrip(sandbox: Sandbox) -> None:
    sandbox.write_file("new/dir/f.txt", "hello")
    assert sandbox.exec("cat new/dir/f.txt && echo more >> new/dir/f.txt").exit_code == 0
    assert sandbox.read_file("new/dir/f.txt") == b"hellomore\n"
    assert sandbox.read_file(f"{sandbox.workdir}/README.md") == b"# demo\n"  # type: ignore[attr-defined]
    sandbox.exec("echo edited > src/pkg/mod.py")
    assert sandbox.read_file("src/pkg/mod.py") == b"edited\n"
    assert sandbox.read_file("link.py") == b"edited\n"
    assert "new/dir/f.txt" in sandbox.list_files() and "link.py" not in sandbox.list_files()


@pytest.mark.parametrize("path", ["../outside", "/etc/passwd", "a/../../x", ""])
def test_paths_outside_are_refused(sandbox: Sandbox, path: str) -> None:
    with pytest.raises(OSError):
        sandbox.read_file(path)
    with pytest.raises(OSError):
        sandbox.write_file(path, "x")


def test_workspace_is_never_modified(workspace: Path, sandbox: Sandbox) -> None:
    before = tree_digest(workspace)
    sandbox.write_file("README.md", "changed")
    sandbox.exec("rm -r tests; echo x > src/pkg/new.py; chmod 700 src")
    sandbox.snapshot().fork().close()
    assert tree_digest(workspace) == before


def test_changed_files(sandbox: Sandbox) -> None:
    sandbox.exec("echo x >> README.md; rm -r tests; touch added; cat link.py > tmp && mv tmp link2")
    sandbox.write_file("src/pkg/mod.py", sandbox.read_file("src/pkg/mod.py"))  # same bytes
    assert sandbox.changed_files() == ["README.md", "added", "link2", "tests/test_mod.py"]


def test_snapshot_and_fork_are_independent(sandbox: Sandbox) -> None:
    sandbox.write_file("state", "1")
    snap = sandbox.snapshot()
    sandbox.write_file("state", "2")
    a, b = snap.fork(), snap.fork()
    try:
        a.exec("echo a > state; rm README.md")
        b.write_file("only_b", "b")
        assert sandbox.read_file("state") == b"2"
        assert a.read_file("state") == b"a\n" and b.read_file("state") == b"1"
        assert "README.md" in b.list_files() and "only_b" not in a.list_files()
        grand = a.snapshot().fork()  # fork of a fork
        assert grand.read_file("state") == b"a\n" and "README.md" not in grand.list_files()
        grand.write_file("state", "g")
        assert a.read_file("state") == b"a\n"
        assert grand.changed_files() == ["README.md", "state"]
        grand.close()
    finally:
        a.close()
        b.close()
        snap.release()


def test_fork_after_parent_closed(sandbox: Sandbox) -> None:
    sandbox.write_file("kept", "yes")
    snap = sandbox.snapshot()
    sandbox.close()
    child = snap.fork()
    snap.release()
    assert child.read_file("kept") == b"yes" and child.exec("cat kept").stdout == "yes"
    child.close()


def test_concurrent_sandboxes(sandbox: Sandbox) -> None:
    snap = sandbox.snapshot()
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        child = snap.fork()
        child.write_file("id", str(i))
        results[i] = child.exec("cat id").stdout
        child.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap.release()
    assert results == {i: str(i) for i in range(4)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_extra_ro_layers(tmp_path: Path, workspace: Path, backend: str) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "README.md").write_text("hidden by the workspace")
    (extra / "vendored.txt").write_text("from extra")
    sb = create_sandbox(workspace, backend, extra_ro_layers=[extra])
    try:
        assert sb.read_file("README.md") == b"# demo\n"
        assert sb.exec("cat vendored.txt").stdout == "from extra"
        assert sb.changed_files() == []
    finally:
        sb.close()
    assert (extra / "vendored.txt").read_text() == "from extra"


def test_unknown_backend(workspace: Path) -> None:
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        create_sandbox(workspace, "docker")


def test_local_limits_apply(workspace: Path) -> None:
    sb = create_sandbox(workspace, "local", Limits(file_size_mb=1))
    try:
        res = sb.exec("head -c 3000000 /dev/zero > big")
        assert res.exit_code != 0 and os.path.getsize(Path(sb.workdir) / "big") <= 1 << 20  # type: ignore[attr-defined]
    finally:
        sb.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_path_dirs_come_first_in_every_exec(tmp_path: Path, workspace: Path, backend: str) -> None:
    from shadowrl.sandbox.bwrap import SANDBOX_ENV

    tools = tmp_path / "tools"
    (tools / "bin").mkdir(parents=True)
    (tools / "bin" / "python3").write_text("#!/bin/sh\necho shadowed\n")
    (tools / "bin" / "python3").chmod(0o755)
    plain = create_sandbox(workspace, backend)
    sb = create_sandbox(workspace, backend, ro_binds={str(tools): tools}, path=[f"{tools}/bin"])
    try:
        default = plain.exec('printf %s "$PATH"').stdout
        assert default == (SANDBOX_ENV["PATH"] if backend == "overlay" else os.environ["PATH"])
        assert plain.exec("python3 -c 'print(6 * 7)'").stdout == "42\n"
        assert sb.exec('printf %s "$PATH"').stdout == f"{tools}/bin:{default}"
        assert sb.exec("python3").stdout == "shadowed\n"
        child = sb.snapshot().fork()
        try:
            assert child.exec("python3").stdout == "shadowed\n"
        finally:
            child.close()
    finally:
        plain.close()
        sb.close()


@pytest.mark.parametrize("bad", [["bin"], ["/opt/a:/opt/b"]])
def test_path_dirs_must_be_absolute(workspace: Path, bad: list[str]) -> None:
    with pytest.raises(ValueError, match="absolute"):
        create_sandbox(workspace, "local", path=bad)
