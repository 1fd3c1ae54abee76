"""How much does one trainer → engine weight sync cost, in bytes and in serving pause?

SmolLM2-135M takes 10 real AdamW steps (lr 1e-6, a small batch of this repository's
own source as demonstrations, through `Trainer`); after each step the weights are
published to a `WeightStore` as an XOR delta against the previous version, fetched
back bit-exactly, and swapped by `Engine.update_weights` into a running engine's
separate serving copy of the model. Reported:

* delta_ratio — stored (compressed) delta bytes / raw full-state bytes, mean of 10;
* pause_ms    — median time of the swap itself (what in-flight requests wait for).

    .venv/bin/python benchmarks/weight_sync.py [--sync-dtype bfloat16] [--steps 10] [--quick]

`--quick` (the tiny random model, 2 steps on 2 rows of 32 tokens) only checks that the
path works: the tiny model's deltas say nothing about SmolLM2's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _machine import machine

RESULTS = Path(__file__).parent / "results" / "weight_sync.json"
QUICK = {"model": "tiny", "steps": 2, "rows": 2, "tokens": 32}


def demonstrations(tokenizer: Any, rows: int, tokens: int) -> list[Any]:
    """Real text as SFT trajectories: this repo's Python files, prompt = first 16 tokens."""
    from shadowrl.types import Segment, Trajectory

    src = Path(__file__).resolve().parents[1] / "src" / "shadowrl"
    files = sorted(src.rglob("*.py"))
    out = []
    for f in files:
        ids = tokenizer(f.read_text(), add_special_tokens=False)["input_ids"][:tokens]
        if len(ids) < tokens:
            continue
        mask = (False,) * 16 + (True,) * (len(ids) - 16)
        seg = Segment(tuple(ids), mask, (0.0,) * len(ids), (0,) * len(ids))
        out.append(Trajectory(f.name, (), (), (seg,), "submitted", reward=1.0))
        if len(out) == rows:
            break
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"Small settings: {QUICK}.")
    ap.add_argument("--model", default="smollm2", choices=["smollm2", "tiny"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--sync-dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.quick:
        vars(args).update(QUICK)

    import copy

    import torch

    from shadowrl.inference.engine import Engine
    from shadowrl.models import ModelConfig, load_model
    from shadowrl.rl.batch import build_sft_batches
    from shadowrl.rl.config import TrainConfig
    from shadowrl.rl.trainer import Trainer
    from shadowrl.rl.weights import WeightStore

    torch.manual_seed(0)
    model, tok = load_model(ModelConfig(path=args.model))
    sync_dtype = getattr(torch, args.sync_dtype)
    serving = copy.deepcopy(model).to(sync_dtype).eval()
    cfg = TrainConfig.model_validate(
        {"sft": {"lr": 1e-6}, "optimizer": {"lr": 1e-6}, "batch": {"microbatch_tokens": 4096}}
    )
    trainer = Trainer(model, cfg, objective="sft")
    batch = build_sft_batches(
        demonstrations(tok, args.rows, args.tokens), batch_tokens=10**9, microbatch_tokens=4096
    )[0]

    def weights() -> dict[str, torch.Tensor]:
        return {k: v.detach().to(sync_dtype) for k, v in trainer.state_dict().items()}

    rows = []
    # a running engine: the swap waits for the decode loop's step boundary, as in serving
    with tempfile.TemporaryDirectory() as tmp, Engine(serving, tok) as engine:
        store = WeightStore(tmp, full_every=10**6)
        reader = WeightStore(tmp)
        base = store.publish(weights(), 0)
        reader.fetch(0)
        for _ in range(args.steps):
            metrics = trainer.step(batch)
            info = store.publish(weights(), trainer.version)
            t0 = time.perf_counter()
            state = reader.fetch(trainer.version)
            t1 = time.perf_counter()
            pause_ms = engine.update_weights(state, trainer.version) * 1e3
            exact = all(torch.equal(state[k], v) for k, v in weights().items())
            rows.append({**info, "fetch_ms": (t1 - t0) * 1e3, "pause_ms": pause_ms,
                         "bit_exact": exact, "nll": metrics["nll"]})  # fmt: skip
            print(f"v{trainer.version}: {info['stored_bytes'] / 1e6:.2f} MB "
                  f"({info['ratio']:.4f} of full) publish {info['publish_ms']:.0f} ms "
                  f"fetch {rows[-1]['fetch_ms']:.0f} ms swap {rows[-1]['pause_ms']:.1f} ms "
                  f"exact={exact}", flush=True)  # fmt: skip

    result = {
        "model": args.model,
        "optimizer": "AdamW lr=1e-6, fp32 master weights",
        "sync_dtype": args.sync_dtype,
        "syncs": len(rows),
        "full_bytes": base["full_bytes"],
        "full_stored_bytes": base["stored_bytes"],
        "delta_ratio": statistics.mean(r["ratio"] for r in rows),
        "pause_ms": statistics.median(r["pause_ms"] for r in rows),
        "fetch_ms": statistics.median(r["fetch_ms"] for r in rows),
        "publish_ms": statistics.median(r["publish_ms"] for r in rows),
        "all_bit_exact": all(r["bit_exact"] for r in rows),
        "per_sync": rows,
        "machine": machine(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"delta_ratio={result['delta_ratio']:.4f} pause_ms={result['pause_ms']:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
