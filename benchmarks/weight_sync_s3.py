"""Bytes and seconds per weight sync through a real S3 API, on the weights of real RL steps.

The source is a run's own weight store (`make demo` leaves one at runs/default/weights:
the versions its RL steps published, fp32 on CPU). Each version is replayed, in order,
through `WeightStore` into a local S3 server (moto's, started here on 127.0.0.1 as a
subprocess and stopped by its pid), one store per encoding, each with a reader that
follows along and checks every fetched version bit for bit:

* full_fp32      — every sync a full fp32 snapshot (the baseline: what a naive sync sends);
* delta_fp32_xor — XOR delta of the fp32 weights (`codec="xor"`);
* delta_fp32     — the default "sub" delta (integer difference of the bit patterns) of
  the fp32 weights: exact for an engine serving fp32 (the CPU default);
* delta_bf16     — "sub" delta of the bf16 serving copy: exact for an engine serving
  bf16 (`engine.dtype=bfloat16`, as on GPU), i.e. the reader holds exactly the bits
  such an engine holds; NOT the fp32 weights.

Reported per encoding: stored (= fetched) bytes per sync, ratio to the full fp32 state,
publish and fetch seconds (moto is a Python server on a shared 2-core box: seconds are
indicative, bytes are exact).

    .venv/bin/python benchmarks/weight_sync_s3.py [--from-store runs/default/weights] [--syncs 3]

`--quick` makes its own source: the tiny random model, 2 real `Trainer.train_groups`
steps on scripted groups; a smoke check that says nothing about SmolLM2.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _machine import machine

RESULTS = Path(__file__).parent / "results" / "weight_sync_s3.json"
ENCODINGS: dict[str, dict[str, Any]] = {  # name -> WeightStore settings
    "full_fp32": {"full_every": 1},
    "delta_fp32_xor": {"full_every": 10**6, "codec": "xor"},
    "delta_fp32": {"full_every": 10**6},
    "delta_bf16": {"full_every": 10**6, "dtype": "bfloat16"},
}


@contextmanager
def s3_server() -> Iterator[dict[str, Any]]:
    """moto's S3 server on a free loopback port; yields s3fs storage options for it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(endpoint, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit("moto server did not start")
        yield {"endpoint_url": endpoint, "key": "bench", "secret": "bench",
               "client_kwargs": {"region_name": "eu-west-1"}}  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(30)


def quick_source(root: Path) -> Path:
    """2 real trainer steps of the tiny model on scripted groups, published to `root`."""
    import torch

    from shadowrl.models import random_llama
    from shadowrl.rl.config import TrainConfig
    from shadowrl.rl.trainer import Trainer
    from shadowrl.rl.weights import WeightStore
    from shadowrl.types import Segment, Trajectory

    def traj(reward: float, gen: list[int]) -> Trajectory:
        ids = [1, 2, 3, *gen]
        seg = Segment(tuple(ids), (False,) * 3 + (True,) * len(gen), (-4.0,) * len(ids),
                      (0,) * len(ids))  # fmt: skip
        return Trajectory("t", (), (), (seg,), "submitted", reward=reward)

    torch.manual_seed(0)
    trainer = Trainer(
        random_llama(0),
        TrainConfig.model_validate({"optimizer": {"lr": 1e-6}, "batch": {"max_staleness": 10}}),
    )
    store = WeightStore(str(root))
    store.publish(trainer.state_dict(), 0)
    for _ in range(2):
        trainer.train_groups([[traj(1.0, [5, 6, 7, 8]), traj(0.0, [9, 9, 9])]])
        store.publish(trainer.state_dict(), trainer.version)
    return root


def replay(source: Any, versions: list[int], name: str, s3: dict[str, Any]) -> list[dict]:
    """Publish each source version to a fresh S3 store as `name`; fetch and check each."""
    import torch

    from shadowrl.rl.weights import WeightStore

    url = f"s3://bench-{uuid.uuid4().hex[:8]}/{name}"
    settings = ENCODINGS[name]
    writer = WeightStore(url, storage_options=s3, **settings)
    reader = WeightStore(url, storage_options=s3)
    cast = (lambda t: t.bfloat16() if t.is_floating_point() else t) if "dtype" in settings else None
    rows = []
    for i, v in enumerate(versions):
        state = source.fetch(v)
        info = writer.publish(state, v)
        before, t0 = dict(reader.fetched), time.perf_counter()
        got = reader.fetch(v)
        fetch_s = time.perf_counter() - t0
        want = {k: cast(t) for k, t in state.items()} if cast else state
        exact = all(torch.equal(got[k].view(-1).view(torch.uint8), t.reshape(-1).view(torch.uint8))
                    for k, t in want.items())  # fmt: skip
        rows.append({"version": v, "kind": info["kind"], "stored_bytes": info["stored_bytes"],
                     "fetched_bytes": reader.fetched["bytes"] - before["bytes"],
                     "shards_fetched": reader.fetched["shards"] - before["shards"],
                     "publish_s": info["publish_ms"] / 1e3, "fetch_s": fetch_s,
                     "bit_exact": exact})  # fmt: skip
        if name == "full_fp32" and i:  # keep the in-memory S3 server small
            writer.fs.rm(f"{writer.root}/v{versions[i - 1]:08d}", recursive=True)
        print(
            f"{name} v{v} ({info['kind']}): {info['stored_bytes'] / 1e6:.1f} MB, publish "
            f"{rows[-1]['publish_s']:.1f} s, fetch {fetch_s:.1f} s, exact={exact}",
            flush=True,
        )
    writer.fs.rm(writer.root.split("/")[0], recursive=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--from-store",
        type=Path,
        default=Path("runs/default/weights"),
        help="A run's weight store (local dir) whose versions are real RL steps.",
    )
    ap.add_argument(
        "--syncs", type=int, default=3, help="Syncs to measure (versions after the first)."
    )
    ap.add_argument(
        "--quick", action="store_true", help="Tiny model, 2 trainer steps: a smoke check."
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()  # fmt: skip

    from shadowrl.rl.weights import WeightStore

    with tempfile.TemporaryDirectory() as tmp, s3_server() as s3:
        root = quick_source(Path(tmp)) if args.quick else args.from_store
        if not root.is_dir():
            raise SystemExit(f"{root}: no weight store; run `make demo` or pass --from-store")
        source = WeightStore(str(root))
        versions = source.versions()[: args.syncs + 1]
        if len(versions) < 2:
            raise SystemExit(f"{root}: needs at least 2 versions, has {versions}")
        full_bytes = sum(t.numel() * t.element_size() for t in source.fetch(versions[0]).values())
        runs = {name: replay(WeightStore(str(root)), versions, name, s3) for name in ENCODINGS}

    def summary(rows: list[dict]) -> dict[str, Any]:
        syncs = rows[1:]  # the first version is the engine's initial full load, not a sync
        return {"bytes_per_sync": statistics.mean(r["stored_bytes"] for r in syncs),
                "ratio_vs_full_fp32": statistics.mean(r["stored_bytes"] for r in syncs) / full_bytes,
                "publish_s": statistics.median(r["publish_s"] for r in syncs),
                "fetch_s": statistics.median(r["fetch_s"] for r in syncs),
                "all_bit_exact": all(r["bit_exact"] for r in rows), "per_sync": rows}  # fmt: skip

    result = {
        "source": "quick: tiny model, 2 trainer steps" if args.quick else str(args.from_store),
        "versions": versions,
        "full_fp32_bytes": full_bytes,
        "encodings": (enc := {name: summary(rows) for name, rows in runs.items()}),
        "machine": machine("s3fs", "moto"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"{'encoding':<14} {'MB/sync':>9} {'vs full fp32':>12} {'publish s':>9} {'fetch s':>8}")
    for name, s in enc.items():
        print(f"{name:<14} {s['bytes_per_sync'] / 1e6:9.2f} {s['ratio_vs_full_fp32']:12.4f} "
              f"{s['publish_s']:9.2f} {s['fetch_s']:8.2f}")  # fmt: skip
    print(" ".join(f"{n}_ratio={enc[n]['ratio_vs_full_fp32']:.4f}" for n in enc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
