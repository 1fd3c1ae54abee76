"""Fork and launch latency of the overlay sandbox against `cp -a`, side by side.

A GRPO group forks G sandboxes from one snapshot, so fork must not grow with the
repository: it mounts a new tmpfs upper over shared layers instead of copying.
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
    forks, execs, cps = [], [], []
    for i in range(REPEATS):
        child = None

        def fork() -> None:
            nonlocal child
            child = snap.fork()

        forks.append(timed_ms(fork))
        assert child is not None
        execs.append(timed_ms(lambda: child.exec("true")))  # noqa: B023
        child.close()
        dst = tmp / f"cp{i}"
        cps.append(timed_ms(lambda: subprocess.run(["cp", "-a", str(ws), str(dst)], check=True)))  # noqa: B023
        shutil.rmtree(dst)
    snap.release()
    root.close()
    med = statistics.median
    return {"fork_ms": med(forks), "exec_true_ms": med(execs), "cp_ms": med(cps)}


def main() -> None:
    results = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for n in SIZES:
            results[n] = bench(make_workspace(tmp, n), tmp)
    print(f"{'files':>6} {'fork ms':>9} {'exec true ms':>13} {'cp -a ms':>9} {'cp/fork':>8}")
    for n, r in results.items():
        ratio = r["cp_ms"] / r["fork_ms"]
        print(
            f"{n:>6} {r['fork_ms']:>9.3f} {r['exec_true_ms']:>13.2f} {r['cp_ms']:>9.2f} {ratio:>8.1f}"
        )
    out = Path(__file__).parent / "results" / "sandbox_fork.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"repeats": REPEATS, "results": results}, indent=2))
    r = results[2000]
    print(
        f"fork_ms_2000={r['fork_ms']:.3f} cp_ms_2000={r['cp_ms']:.2f} ratio={r['cp_ms'] / r['fork_ms']:.1f}"
    )


if __name__ == "__main__":
    main()
