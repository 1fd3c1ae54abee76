"""What per-token entropy costs the engine: its sampler with and without it, side by side.

The engine reports the entropy of every token's sampling distribution
(`sampling.select_with_entropy`), always. This measures whether that is free enough to
leave on: on the same logits [B, vocab] it times the sampler that returns only tokens and
logprobs (`select_tokens`) and the one that adds entropies, and compares the difference
with one whole decode step of the model at that batch size (forward + sampling, timed
through the engine's own step). Sampling settings: the agent's default (temperature 1,
no filter) and a filtered one (top-p 0.95), whose sort dominates either way. Times are
the CPU time of the calling thread (torch on one thread), medians of alternating runs,
so other work on a shared machine does not count.

    python benchmarks/entropy.py            # SmolLM2, batch 1, 8, 32
    python benchmarks/entropy.py --quick    # tiny random model

Writes benchmarks/results/entropy.json (`--quick`: entropy_quick.json; `--out` elsewhere);
the last line is `overhead_of_decode_step=<max over batch sizes, as a fraction>`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _machine import machine

RESULTS = Path(__file__).parent / "results"


def timed(fn: Callable[[], Any], repeats: int) -> float:
    """Median seconds of `fn()` over `repeats` runs (after one warm-up)."""
    return paired([fn], repeats)[0]


def paired(fns: list[Callable[[], Any]], repeats: int) -> list[float]:
    """Median seconds of each of `fns`, run in turn `repeats` times, so that a busy
    machine slows them alike (after one warm-up each)."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, ts in zip(fns, times, strict=True):
            start = time.thread_time()
            fn()
            ts.append(time.thread_time() - start)
    return [statistics.median(ts) for ts in times]


def params(batch: int, top_p: float) -> Any:
    import torch

    from shadowrl.inference.sampling import BatchSampling

    return BatchSampling(
        temperature=torch.ones(batch), top_k=torch.zeros(batch, dtype=torch.int64),
        top_p=torch.full((batch,), top_p), seed=torch.arange(batch),
        counter=torch.zeros(batch, dtype=torch.int64), filtered=top_p < 1,
    )  # fmt: skip


def decode_step_s(engine: Any, batch: int, span: int, repeats: int) -> float:
    """One decode step of `batch` requests with `span` cached tokens, as the engine runs it."""
    import torch

    from shadowrl.inference.requests import Request
    from shadowrl.types import SamplingParams

    ids = torch.randint(3, 1000, (span,), generator=torch.Generator().manual_seed(0)).tolist()
    reqs = [Request(tuple(ids), SamplingParams(seed=i), frozenset(), i, lambda _: None)
            for i in range(batch)]  # fmt: skip
    for r in reqs:
        r.tokens.append(1)
    engine.cache.reserve(span + 1)
    with torch.inference_mode():
        return timed(lambda: engine.stepper.decode(reqs, span + 1), repeats)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny random model")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--span", type=int, default=512, help="cached tokens per request")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--out", type=Path, help="result file (default: results/entropy.json)")
    args = p.parse_args()

    import torch

    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.inference.sampling import select_tokens, select_with_entropy
    from shadowrl.models import ModelConfig, load_model, tiny_model

    torch.set_num_threads(1)  # thread CPU time is then all of the work
    model, tok = tiny_model(seed=0) if args.quick else load_model(ModelConfig())
    config = EngineConfig(max_batch=max(args.batches), max_seq_len=args.span + 8)
    engine = Engine(model, tok, config)
    vocab = model.get_output_embeddings().out_features
    rows = []
    for batch in args.batches:
        step = decode_step_s(engine, batch, args.span, args.repeats)
        logits = torch.randn(batch, vocab, generator=torch.Generator().manual_seed(batch))
        for top_p in (1.0, 0.95):
            bs = params(batch, top_p)
            without, with_h = paired(
                [lambda: select_tokens(logits, bs), lambda: select_with_entropy(logits, bs)],  # noqa: B023
                args.repeats,
            )
            extra = max(with_h - without, 0.0)
            rows.append({
                "batch": batch, "top_p": top_p, "decode_step_ms": round(step * 1e3, 3),
                "sampler_ms": round(without * 1e3, 4), "sampler_with_entropy_ms":
                round(with_h * 1e3, 4), "overhead_of_decode_step": round(extra / step, 5),
            })  # fmt: skip
            print(rows[-1], flush=True)
    worst = max(r["overhead_of_decode_step"] for r in rows)
    result = {
        "model": "tiny" if args.quick else "smollm2",
        "vocab": vocab,
        "span": args.span,
        "repeats": args.repeats,
        "rows": rows,
        "overhead_of_decode_step": worst,
        "machine": machine(),
    }
    out = args.out or RESULTS / ("entropy_quick.json" if args.quick else "entropy.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"overhead_of_decode_step={worst:.4f}")


if __name__ == "__main__":
    main()
