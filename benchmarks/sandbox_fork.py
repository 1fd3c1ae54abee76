"""Fork and exec latency of the overlay sandbox, side by side with `cp -a` and bwrap.

A GRPO group forks G sandboxes from one snapshot, so fork must not grow with the
repository: it mounts a new tmpfs upper over shared layers instead of copying.
An agent then execs dozens of commands per sandbox: the first exec starts the
sandbox's pid 1 (one bwrap launch, "cold"); later ones are a socket round trip plus a
fork+exec inside ("warm"). A bare `bwrap --unshare-net --ro-bind / / true`, timed in
the same loop, shows what one bwrap launch costs on this machine at this load.
Run as root: `.venv/bin/python benchmarks/sandbox_fork.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

SIZES = {10: 10, 200: 200, 2000: 2000}  # files per workspace; 2,000 files ~ 50 MB total
TOTAL_BYTES_2000 = 50 << 20
REPEATS = 15
WARM_EXECS = 5  # per fork, after the cold one
BWRAP_TRUE = ["bwrap", "--unshare-net", "--ro-bind", "/", "/", "true"]


def make_workspace(root: Path, n_files: int) -> Path:
    ws = root / f"ws{n_files}"
    size = TOTAL_BYTES_2000 // 2000
    for i in range(n_files):
        p = ws / f"pkg{i % 20}" / f"mod{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(size // 2).hex().encode())
    return ws


def timed_ms(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return (time.perf_counter() - start) * 1e3


def bench(ws: Path, tmp: Path) -> dict[str, float]:
    from shadowrl.sandbox import create_sandbox

    root = create_sandbox(ws, "overlay")
    snap = root.snapshot()
    forks, colds, warms, bwraps, cps = [], [], [], [], []
    for i in range(REPEATS):
        child = None

        def fork() -> None:
            nonlocal child
            child = snap.fork()

        forks.append(timed_ms(fork))
        assert child is not None
        colds.append(timed_ms(lambda: child.exec("true")))  # noqa: B023
        warms += [timed_ms(lambda: child.exec("true")) for _ in range(WARM_EXECS)]  # noqa: B023
        bwraps.append(timed_ms(lambda: subprocess.run(BWRAP_TRUE, check=True)))
        child.close()
        dst = tmp / f"cp{i}"
        cps.append(timed_ms(lambda: subprocess.run(["cp", "-a", str(ws), str(dst)], check=True)))  # noqa: B023
        shutil.rmtree(dst)
    snap.release()
    root.close()
    med = statistics.median
    return {
        "fork_ms": med(forks), "exec_true_ms": med(warms), "exec_true_cold_ms": med(colds),
        "bwrap_true_ms": med(bwraps), "cp_ms": med(cps),
    }  # fmt: skip


def main() -> None:
    results = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for n in SIZES:
            results[n] = bench(make_workspace(tmp, n), tmp)
    head = ("files", "fork ms", "cp -a ms", "cp/fork", "exec warm", "exec cold", "bwrap true",
            "bwrap/warm")  # fmt: skip
    print(" ".join(f"{h:>10}" for h in head))
    for n, r in results.items():
        cells = (r["fork_ms"], r["cp_ms"], r["cp_ms"] / r["fork_ms"], r["exec_true_ms"],
                 r["exec_true_cold_ms"], r["bwrap_true_ms"], r["bwrap_true_ms"] / r["exec_true_ms"])  # fmt: skip
        print(f"{n:>10} " + " ".join(f"{c:>10.2f}" for c in cells))
    out = Path(__file__).parent / "results" / "sandbox_fork.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps({"repeats": REPEATS, "warm_execs": WARM_EXECS, "results": results}, indent=2)
    )
    r = results[2000]
    print(
        f"fork_ms_2000={r['fork_ms']:.3f} cp_ms_2000={r['cp_ms']:.2f} ratio={r['cp_ms'] / r['fork_ms']:.1f}"
    )


if __name__ == "__main__":
    main()
