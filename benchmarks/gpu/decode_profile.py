"""Where does one CUDA-graph decode step of the engine spend its time? (diagnostic)

Times, as CUDA graphs replayed on the engine's own buffers (median of `--iters` replays
after a warm-up), for each batch size and attention span:

* step    — the engine's whole step (`decode_and_sample`: forward + sampling);
* forward — `Decoder.decode` alone (logits, no sampling);
* sample  — `select_tokens` alone on logits of the same shape;
* lm_head — the final norm + vocabulary projection alone;

then profiles a few eager steps (kernel count per step, GPU time per step, top kernels).
Compare with the floor: weight bytes + KV bytes over the measured copy bandwidth.

    python benchmarks/gpu/decode_profile.py [--model qwen2.5-0.5b-random] [--device cuda]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from engine_vs_hf import build_model
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.sampling import select_tokens
from shadowrl.inference.step import decode_and_sample


def timer(fn: Callable[[], Any], iters: int, cuda: bool) -> float:
    """Median ms of fn() replayed as a CUDA graph (CPU: plain calls)."""
    if cuda:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        run: Callable[[], Any] = graph.replay
    else:
        fn()  # warm-up (and compile)
        run = fn
    times = []
    for _ in range(iters):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            run()
            times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-0.5b-random")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--max-seq-len", type=int, default=1281)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--compile", action="store_true", help="torch.compile the forward, as "
                    "engine.compile_decode does")  # fmt: skip
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    model = build_model(args.model, args.device, args.dtype)
    config = EngineConfig(max_batch=32, max_seq_len=args.max_seq_len, prefix_cache_tokens=0,
                          cuda_graphs=False)  # fmt: skip
    engine = Engine(model, None, config, seed=0)
    engine.cache.reserve(args.max_seq_len)  # full-size cache, as with graphs
    dec, cache, bufs = engine.decoder, engine.cache, engine.stepper.buffers
    forward = torch.compile(dec.decode, dynamic=True) if args.compile else dec.decode
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    kv_token = 2 * dec.shape.layers * dec.shape.kv_heads * dec.shape.head_dim * 2
    print(f"weights {weights / 1e9:.3f} GB, KV {kv_token} B/token; floor = bytes / bandwidth")
    print(f"{'rows':>4} {'span':>5} {'step':>7} {'forward':>8} {'sample':>7} {'lm_head':>8} "
          f"{'floor@4TB/s':>11}  (ms)")  # fmt: skip
    with torch.inference_mode():
        vocab = model.config.vocab_size
        for rows in (1, 8, 32):
            engine.stepper._load([], rows)
            tokens, lengths, params = bufs.inputs(rows, sampled=True, filtered=False)
            lengths.fill_(args.max_seq_len // 2)
            hidden = torch.randn(rows, model.config.hidden_size, device=args.device,
                                 dtype=model.dtype)  # fmt: skip
            logits = torch.randn(rows, vocab, device=args.device)
            for span in sorted({1024, args.max_seq_len}):
                fns = {
                    "step": partial(
                        decode_and_sample,
                        dec,
                        cache,
                        bufs,
                        rows,
                        span,
                        True,
                        False,
                        forward=forward,
                    ),
                    "forward": partial(forward, tokens, lengths, cache, span),
                    "sample": partial(select_tokens, logits, params),
                    "lm_head": partial(lambda x: dec.lm_head(dec.norm(x)), hidden),
                }
                t = {name: timer(fn, args.iters, cuda) for name, fn in fns.items()}
                floor = (weights + rows * span * kv_token) / 4e12 * 1e3
                print(f"{rows:>4} {span:>5} {t['step']:>7.3f} {t['forward']:>8.3f} "
                      f"{t['sample']:>7.3f} {t['lm_head']:>8.3f} {floor:>11.3f}", flush=True)  # fmt: skip
        profile(dec, cache, bufs, args.max_seq_len, cuda, forward)


def profile(dec: Any, cache: Any, bufs: Any, span: int, cuda: bool, forward: Any) -> None:
    """Eager steps under the profiler: kernels per step, GPU ms per step, top kernels."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    steps = 5
    for _ in range(3):
        decode_and_sample(dec, cache, bufs, 32, span, True, False, forward=forward)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch_profile(activities=activities) as prof:
        for _ in range(steps):
            decode_and_sample(dec, cache, bufs, 32, span, True, False, forward=forward)
        if cuda:
            torch.cuda.synchronize()
    events = prof.key_averages()
    key = "device_time_total" if cuda else "cpu_time_total"
    if cuda:
        kernels = [e for e in events if e.device_time_total > 0 and e.device_type.name == "CUDA"]
        count = sum(e.count for e in kernels) / steps
        busy = sum(e.device_time_total for e in kernels) / steps / 1e3
        print(f"eager step, 32 rows, span {span}: {count:.0f} kernels, GPU busy {busy:.3f} ms")
    print(events.table(sort_by=key, row_limit=18, max_name_column_width=60))


if __name__ == "__main__":
    main()
