"""Overlay-only behaviour: O(1) layering, squashing, quotas and leak-free cleanup."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from required import unavailable
from shadowrl.sandbox import Limits, create_sandbox
from shadowrl.sandbox.layers import get_store
from shadowrl.sandbox.overlay import OverlaySandbox

from .conftest import needs_overlay

pytestmark = needs_overlay


def _leftovers() -> tuple[list[str], list[Path], list[Path]]:
    gc.collect()  # snapshots dropped without release() free their layers when collected
    store = get_store()
    mounts = [m for m in Path("/proc/mounts").read_text().splitlines() if str(store.root) in m]
    groups = [c for p in (store.cgroups.parents if store.cgroups else ()) for c in p.iterdir()]
    return mounts, list(store.root.iterdir()), [g for g in groups if g.is_dir()]


def test_close_leaves_no_mounts_dirs_groups_or_processes(workspace: Path) -> None:
    assert _leftovers() == ([], [], [])
    sb = create_sandbox(workspace, "overlay")
    sb.exec("sleep 60 & echo started")
    snap = sb.snapshot()
    kids = [snap.fork() for _ in range(3)]
    kids[0].exec("touch x")
    grand = kids[0].snapshot()
    assert _leftovers() != ([], [], [])
    for s in [sb, *kids]:
        s.close()
    snap.release()
    assert _leftovers()[0] != []  # `grand` still holds its layers
    grand.release()
    assert _leftovers() == ([], [], [])


def test_snapshot_without_changes_adds_no_layer(workspace: Path) -> None:
    sb = create_sandbox(workspace, "overlay")
    assert isinstance(sb, OverlaySandbox)
    s1, s2 = sb.snapshot(), sb.snapshot()
    sb.write_file("x", "1")
    s3 = sb.snapshot()
    assert (s1.depth, s2.depth, s3.depth) == (0, 0, 1)
    for s in (s1, s2, s3):
        s.release()
    sb.close()


def test_squash_keeps_content_and_bounds_depth(workspace: Path) -> None:
    sb = create_sandbox(workspace, "overlay", squash_depth=3)
    snaps = []
    for i in range(8):
        sb.exec(f"echo {i} > f{i}; echo {i} > README.md")
        if i == 2:
            sb.exec("rm -r tests src/pkg/mod.py")
        if i == 4:
            sb.exec("mkdir tests && echo back > tests/new.py")
        snaps.append(sb.snapshot())
    assert max(s.depth for s in snaps) <= 4  # type: ignore[attr-defined]
    child = snaps[-1].fork()
    assert child.read_file("README.md") == b"7\n"
    assert [f"f{i}" for i in range(8)] == [f for f in child.list_files() if f.startswith("f")]
    assert "src/pkg/mod.py" not in child.list_files()
    assert child.exec("ls tests").stdout == "new.py\n"
    assert child.changed_files() == sorted(
        [
            *(f"f{i}" for i in range(8)),
            "README.md",
            "src/pkg/mod.py",
            "tests/new.py",
            "tests/test_mod.py",
        ]
    )
    assert snaps[1].fork().read_file("README.md") == b"1\n"  # older snapshots still intact
    for s in snaps:
        s.release()
    child.close()
    sb.close()


def test_disk_quota_spans_snapshot_layers(workspace: Path) -> None:
    sb = create_sandbox(workspace, "overlay", Limits(disk_mb=8))
    assert sb.exec("head -c 5000000 /dev/zero > a").exit_code == 0
    snap = sb.snapshot()
    res = sb.exec("head -c 5000000 /dev/zero > b")
    assert res.exit_code != 0 and "No space" in res.stderr
    snap.release()
    sb.close()


def test_ro_binds(tmp_path: Path, workspace: Path) -> None:
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "tool").write_text("#!/bin/sh\necho from-env\n")
    (env / "bin" / "tool").chmod(0o755)
    sb = create_sandbox(workspace, "overlay", ro_binds={"/opt/env": env})
    try:
        assert sb.exec("/opt/env/bin/tool").stdout == "from-env\n"
        assert sb.exec("touch /opt/env/x").exit_code != 0
        child = sb.snapshot().fork()
        assert child.exec("/opt/env/bin/tool").stdout == "from-env\n"
        child.close()
    finally:
        sb.close()


def test_cannot_fork_released_snapshot(workspace: Path) -> None:
    sb = create_sandbox(workspace, "overlay")
    snap = sb.snapshot()
    snap.release()
    with pytest.raises(RuntimeError):
        snap.fork()
    sb.close()


def test_ro_bind_under_tmp_survives_the_scrub(tmp_path: Path, workspace: Path) -> None:
    """/tmp is emptied after each exec, but a bind placed inside it stays (pid 1 too)."""
    env = tmp_path / "venv"  # under the host's /tmp, like the default test cache
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "tool").write_text("#!/bin/sh\necho from-env\n")
    (env / "bin" / "tool").chmod(0o755)
    inside = f"/tmp/cache/{env.name}"
    sb = create_sandbox(workspace, "overlay", ro_binds={inside: env}, path=[f"{inside}/bin"])
    try:
        first = sb.exec("tool && touch /tmp/litter /tmp/cache/litter && chmod 0 /tmp/cache")
        assert (first.exit_code, first.stdout) == (0, "from-env\n")
        pid1 = sb._supervisor  # type: ignore[attr-defined]
        again = sb.exec("ls -A /tmp /tmp/cache && tool")
        assert again.exit_code == 0, again.stderr
        assert again.stdout == f"/tmp:\ncache\n\n/tmp/cache:\n{env.name}\nfrom-env\n"
        assert sb._supervisor is pid1 and pid1.alive  # type: ignore[attr-defined]
    finally:
        sb.close()


@needs_overlay
def test_a_killed_owners_store_is_swept_and_a_live_one_is_not(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    from shadowrl.sandbox.layers import LayerStore, sweep_orphans

    code = (
        "import os, signal, sys; from pathlib import Path\n"
        "from shadowrl.sandbox.layers import LayerStore\n"
        "store = LayerStore(parent=Path(sys.argv[1])); store.upper(1)\n"
        "print(store.root, flush=True); os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True
    )
    assert child.returncode == -signal.SIGKILL
    dead = Path(child.stdout.strip())
    mounts = Path("/proc/self/mountinfo").read_text
    assert dead.is_dir() and str(dead) in mounts()  # the kill left its tmpfs mounted
    live = LayerStore(parent=tmp_path)
    live.cgroups = None  # this process's groups belong to its global store; leave them
    live.upper(1)
    try:
        assert sweep_orphans(tmp_path) == 1
        assert not dead.exists() and str(dead) not in mounts()
        assert live.root.is_dir() and str(live.root) in mounts()  # owner alive: untouched
        assert live.root.name.startswith(f"shadowrl-sb-{os.getpid()}-")
    finally:
        live.close()
    assert not live.root.exists()


@needs_overlay
def test_a_killed_owners_cgroups_are_swept_with_their_processes() -> None:
    import contextlib
    import os
    import signal
    import subprocess
    import sys

    from shadowrl.sandbox.cgroups import sweep_orphan_groups

    layout = get_store().cgroups
    if layout is None:
        unavailable("no writable cgroup hierarchy here")
    code = (  # a sandbox's group holding a live process, then its owner dies by SIGKILL
        "import os, signal, subprocess\n"
        "from shadowrl.sandbox.base import Limits\n"
        "from shadowrl.sandbox.cgroups import Cgroup, find_cgroups\n"
        "group = Cgroup(find_cgroups(), 'orphan', Limits())\n"
        "p = subprocess.Popen(['sleep', '600'], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "for f in group.procs_files: open(f, 'w').write(str(p.pid))\n"
        "print(p.pid, *group.dirs, flush=True); os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    pid, *dirs = child.stdout.split()
    groups = [Path(d) for d in dirs]
    try:
        assert groups and all(g.is_dir() for g in groups)  # the kill left them behind
        assert sweep_orphan_groups(layout) >= len({g.parent for g in groups})  # + older orphans
        assert not any(g.parent.exists() for g in groups)
        assert _gone(int(pid))  # the sleeper went with its group
        assert all(p.is_dir() for p in layout.parents)  # ours: owner alive, untouched
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie waiting for init to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


def test_concurrent_sweeps_of_the_same_orphans_never_raise(tmp_path: Path) -> None:
    # Ray starts several environment workers at once, each sweeping on its first sandbox:
    # a root another sweeper removed mid-walk must be skipped, not fail the sandbox.
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from shadowrl.sandbox.layers import sweep_orphans

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    for i in range(300):
        for part in ("a", "b", "c"):
            (tmp_path / f"shadowrl-sb-{dead}-{i:03d}" / part).mkdir(parents=True)
    with ThreadPoolExecutor(4) as pool:
        swept = list(pool.map(lambda _: sweep_orphans(tmp_path), range(4)))
    assert sum(swept) == 300 and not list(tmp_path.iterdir())
