"""How much does one trainer → engine weight sync cost, in bytes and in serving pause?

SmolLM2-135M takes 10 real AdamW steps (lr 1e-6, a small batch of this repository's
own source as demonstrations, through `Trainer`); after each step the weights are
published to a `WeightStore` as an XOR delta against the previous version, fetched
back bit-exactly, and swapped into a separate serving copy of the model. Reported:

* delta_ratio — stored (compressed) delta bytes / raw full-state bytes, mean of 10;
* pause_ms    — median time of the swap itself (what in-flight requests wait for).

The engine's `Engine.update_weights` is timed when the engine module exists;
otherwise the serving copy's `load_state_dict` (what the swap does underneath) is
timed instead and `pause_source` in the JSON says so.

    .venv/bin/python benchmarks/weight_sync.py [--sync-dtype bfloat16] [--steps 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "weight_sync.json"


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


def swap_fn(serving: Any, tokenizer: Any) -> tuple[Callable[[Any, int], float], str]:
    """The swap to time (returns ms): the running engine's, else the model's load_state_dict."""
    try:
        from shadowrl.inference.engine import Engine
    except ImportError:

        def load(state: Any, version: int) -> float:
            t0 = time.perf_counter()
            serving.load_state_dict(state, strict=False)
            return (time.perf_counter() - t0) * 1e3

        return load, "model.load_state_dict (shadowrl.inference.engine not available)"
    engine = Engine(serving, tokenizer).start()  # a running loop: the swap waits for a step
    return (lambda state, version: engine.update_weights(state, version) * 1e3), (
        "Engine.update_weights (running engine, pause it reports)"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--sync-dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    import copy

    import torch

    from shadowrl.models import ModelConfig, load_model
    from shadowrl.rl.batch import build_sft_batches
    from shadowrl.rl.config import TrainConfig
    from shadowrl.rl.trainer import Trainer
    from shadowrl.rl.weights import WeightStore

    torch.manual_seed(0)
    model, tok = load_model(ModelConfig(path="smollm2", dtype="float32"))
    sync_dtype = getattr(torch, args.sync_dtype)
    serving = copy.deepcopy(model).to(sync_dtype).eval()
    swap, pause_source = swap_fn(serving, tok)
    cfg = TrainConfig.model_validate({"sft_lr": 1e-6, "lr": 1e-6, "microbatch_tokens": 4096})
    trainer = Trainer(model, cfg, objective="sft")
    batch = build_sft_batches(
        demonstrations(tok, args.rows, args.tokens), batch_tokens=10**9, microbatch_tokens=4096
    )[0]

    def weights() -> dict[str, torch.Tensor]:
        return {k: v.detach().to(sync_dtype) for k, v in trainer.state_dict().items()}

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
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
            pause_ms = swap(state, trainer.version)
            exact = all(torch.equal(state[k], v) for k, v in weights().items())
            rows.append({**info, "fetch_ms": (t1 - t0) * 1e3, "pause_ms": pause_ms,
                         "bit_exact": exact, "nll": metrics["nll"]})  # fmt: skip
            print(f"v{trainer.version}: {info['stored_bytes'] / 1e6:.2f} MB "
                  f"({info['ratio']:.4f} of full) publish {info['publish_ms']:.0f} ms "
                  f"fetch {rows[-1]['fetch_ms']:.0f} ms swap {rows[-1]['pause_ms']:.1f} ms "
                  f"exact={exact}", flush=True)  # fmt: skip

    result = {
        "model": "SmolLM2-135M",
        "optimizer": "AdamW lr=1e-6, fp32 master weights",
        "sync_dtype": args.sync_dtype,
        "syncs": len(rows),
        "full_bytes": base["full_bytes"],
        "full_stored_bytes": base["stored_bytes"],
        "delta_ratio": statistics.mean(r["ratio"] for r in rows),
        "pause_ms": statistics.median(r["pause_ms"] for r in rows),
        "pause_source": pause_source,
        "fetch_ms": statistics.median(r["fetch_ms"] for r in rows),
        "publish_ms": statistics.median(r["publish_ms"] for r in rows),
        "all_bit_exact": all(r["bit_exact"] for r in rows),
        "per_sync": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"delta_ratio={result['delta_ratio']:.4f} pause_ms={result['pause_ms']:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
