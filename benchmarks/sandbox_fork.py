"""Fork and exec latency of the overlay sandbox, side by side with `cp -a` and bwrap.

A GRPO group forks G sandboxes from one snapshot, so fork must not grow with the
repository: it mounts a new tmpfs upper over shared layers instead of copying.
An agent then execs dozens of commands per sandbox: the first exec starts the
sandbox's pid 1 (one bwrap launch, "cold"); later ones are a socket round trip plus a
fork+exec inside ("warm"). A bare `bwrap --unshare-net --ro-bind / / true`, timed in
the same loop, shows what one bwrap launch costs on this machine at this load.
"claim" is what an episode waits for under bursty RL load: bursts of a GRPO group's
claims at random gaps, served by an elastic warm pool (`sandbox/pool.py`) that starts at
`min_ready=1` and refills in the background while the bursts arrive; claim + first exec
is timed, side by side with fork + first exec without a pool (the cold path).
Run as root: `.venv/bin/python benchmarks/sandbox_fork.py [--quick] [--out FILE]`; writes
benchmarks/results/sandbox_fork.json by default.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _machine import machine

RESULTS = Path(__file__).parent / "results" / "sandbox_fork.json"
SIZES = [10, 200, 2000]  # files per workspace; 2,000 files ~ 50 MB total
TOTAL_BYTES_2000 = 50 << 20
REPEATS = 15
QUICK_SIZES, QUICK_REPEATS = [10, 200], 3
BURST, BURSTS, QUICK_BURSTS, GAP_S = 8, 12, 4, 1.0  # claims per burst; mean gap (exponential)
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


def bench(ws: Path, tmp: Path, repeats: int) -> dict[str, float]:
    from shadowrl.sandbox import create_sandbox

    root = create_sandbox(ws, "overlay")
    snap = root.snapshot()
    forks, colds, warms, bwraps, cps = [], [], [], [], []
    for i in range(repeats):
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


def bursty(ws: Path, bursts: int, seed: int = 0) -> dict[str, float]:
    """Claim + first exec from an elastic warm pool under bursts; the cold path beside it."""
    import random
    import threading

    from shadowrl.sandbox import PoolConfig, WarmPool, create_sandbox

    rng = random.Random(seed)
    root = create_sandbox(ws, "overlay")
    snap = root.snapshot()
    claims, colds, closers = [], [], []
    load_before = os.getloadavg()[0]  # the figure is only as quiet as the box
    with WarmPool(snap, PoolConfig(min_ready=1, max_ready=16, idle_s=4 * GAP_S)) as pool:
        for _ in range(bursts):
            held = []
            for _ in range(BURST):
                start = time.perf_counter()
                box = pool.claim()
                box.exec("true")
                claims.append((time.perf_counter() - start) * 1e3)
                held.append(box)
            cold = snap.fork()  # the same moment's cold path, for the ratio
            colds.append(timed_ms(lambda: cold.exec("true")))  # noqa: B023
            held.append(cold)
            # episodes hold their sandboxes for a while, then close them off this thread
            closers.append(threading.Thread(target=lambda h=held: [b.close() for b in h]))
            closers[-1].start()
            time.sleep(rng.expovariate(1 / GAP_S))
        stats = pool.stats
    for t in closers:
        t.join()
    snap.release()
    root.close()
    q = statistics.quantiles(claims, n=10)
    return {
        "claim_ms": statistics.median(claims), "claim_p90_ms": q[-1],
        "cold_claim_ms": statistics.median(colds), "hit_rate": stats.hits / len(claims),
        "claims": len(claims),
        "load_before": load_before, "load_after": os.getloadavg()[0],
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help=f"Sizes {QUICK_SIZES}, {QUICK_REPEATS} repeats."
    )
    ap.add_argument("--sizes", type=int, nargs="+", help=f"Files per workspace (default {SIZES}).")
    ap.add_argument("--repeats", type=int, help=f"Forks per workspace (default {REPEATS}).")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    repeats = args.repeats or (QUICK_REPEATS if args.quick else REPEATS)
    results = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for n in sizes:
            results[n] = bench(make_workspace(tmp, n), tmp, repeats)
        pool = bursty(tmp / f"ws{max(sizes)}", QUICK_BURSTS if args.quick else BURSTS)
    head = ("files", "fork ms", "cp -a ms", "cp/fork", "exec warm", "exec cold", "bwrap true",
            "bwrap/warm")  # fmt: skip
    print(" ".join(f"{h:>10}" for h in head))
    for n, r in results.items():
        cells = (r["fork_ms"], r["cp_ms"], r["cp_ms"] / r["fork_ms"], r["exec_true_ms"],
                 r["exec_true_cold_ms"], r["bwrap_true_ms"], r["bwrap_true_ms"] / r["exec_true_ms"])  # fmt: skip
        print(f"{n:>10} " + " ".join(f"{c:>10.2f}" for c in cells))
    print(f"warm pool under bursts of {BURST}: claim + first exec median {pool['claim_ms']:.2f} ms "
          f"(p90 {pool['claim_p90_ms']:.2f}), cold fork + first exec {pool['cold_claim_ms']:.2f} ms, "
          f"hits {pool['hit_rate']:.0%} of {pool['claims']:.0f}, 1-min load {pool['load_before']:.1f}"
          f" -> {pool['load_after']:.1f}")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {"repeats": repeats, "warm_execs": WARM_EXECS, "results": results, "pool": pool}
    args.out.write_text(json.dumps({**result, "machine": machine()}, indent=2))
    n = max(results)  # the largest workspace: where copying costs most
    r = results[n]
    print(f"fork_ms_{n}={r['fork_ms']:.3f} cp_ms_{n}={r['cp_ms']:.2f} "
          f"ratio={r['cp_ms'] / r['fork_ms']:.1f} claim_ms={pool['claim_ms']:.2f} "
          f"cold_claim_ms={pool['cold_claim_ms']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
