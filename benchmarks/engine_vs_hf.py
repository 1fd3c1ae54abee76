"""Engine vs `transformers.generate`, side by side on the same prompts and model.

The rollout workload is many prompts of mixed lengths with mixed completion lengths.
`generate` must pad every prompt to the longest and keep decoding until the longest
completion is done; the engine prefills prompts in batches, retires sequences as they
finish and, on CUDA, replays each decode step from a CUDA graph. Both sample at
temperature 1 with the same per-request token budgets. The engine is started (graphs
captured, reported as startup_s) and warmed up before the clock starts, as a server is;
with `--repeats N` each side also gets a warm-up and N timed runs, and the median counts.

    python benchmarks/engine_vs_hf.py                 # SmolLM2 on CPU
    python benchmarks/engine_vs_hf.py --quick         # fewer/shorter prompts
    python benchmarks/engine_vs_hf.py --model qwen2.5-0.5b-random --device cuda --dtype bfloat16

Prints tokens/s for both, writes benchmarks/results/engine_vs_hf_<device>.json (`--out`
elsewhere) and ends with `engine_tps=<x> hf_tps=<y> ratio=<x/y>`.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path
from typing import Any

from _floor import cpu_flags
from _machine import machine
from _phases import Phases
from _profile import profile_engine

RESULTS = Path(__file__).parent / "results"


def build_model(name: str, device: str, dtype: str) -> Any:
    """'smollm2', 'tiny', or '<arch>-random' (a real architecture, random weights)."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen2Config

    from shadowrl.models import ModelConfig, load_model

    if name != "qwen2.5-0.5b-random":
        return load_model(ModelConfig(path=name, device=device), dtype)[0]
    cfg = Qwen2Config(  # type: ignore[call-arg]  # Qwen2.5-0.5B's shape (rope_theta: kwargs)
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        rope_theta=1000000.0,
        tie_word_embeddings=True,
        eos_token_id=151645,
        pad_token_id=151643,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=getattr(torch, dtype))
    model.generation_config = GenerationConfig(eos_token_id=151645, pad_token_id=151643)
    return model.eval()


def workload(n: int, vocab: int, scale: float, seed: int = 0) -> list[tuple[list[int], int]]:
    """n (prompt, max_new_tokens) pairs: prompts 128-1024 tokens, completions 32-256."""
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        plen = int(int(torch.randint(128, 1025, (1,), generator=g)) * scale)
        new = int(int(torch.randint(32, 257, (1,), generator=g)) * scale)
        out.append((torch.randint(3, vocab, (max(plen, 8),), generator=g).tolist(), max(new, 4)))
    return out


def run_hf(model: Any, work: list[tuple[list[int], int]], batch: int) -> int:
    """Batched, left-padded `generate`; returns tokens kept (each up to its own budget)."""
    import torch

    kept = 0
    pad = model.generation_config.pad_token_id
    for i in range(0, len(work), batch):
        chunk = work[i : i + batch]
        width = max(len(p) for p, _ in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, (p, _) in enumerate(chunk):
            ids[row, width - len(p) :] = torch.tensor(p)
            mask[row, width - len(p) :] = 1
        dev = model.device
        out = model.generate(
            ids.to(dev),
            attention_mask=mask.to(dev),
            do_sample=True,
            temperature=1.0,
            top_k=0,
            max_new_tokens=max(n for _, n in chunk),
            eos_token_id=[],  # random weights: never stop early, same budget as the engine
        )
        kept += sum(min(n, out.shape[1] - width) for _, n in chunk)
    return kept


def make_engine(
    model: Any,
    work: list[tuple[list[int], int]],
    batch: int,
    compile_decode: bool = False,
    weights: str = "dense",
) -> Any:
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine

    longest = max(len(p) + n for p, n in work)
    # No prefix cache: the runs below repeat the same prompts, which would turn into cache
    # hits and flatter the engine (`prefix_cache.py` measures the cache on its own).
    config = EngineConfig(
        max_batch=batch,
        max_seq_len=longest + 1,
        prefix_cache_tokens=0,
        compile_decode=compile_decode,
        weights=weights,
    )
    engine = Engine(model, None, config, seed=0)
    engine.default_stop_ids = frozenset()  # match HF's eos_token_id=[] above
    return engine


def run_engine(engine: Any, work: list[tuple[list[int], int]]) -> int:
    from shadowrl.types import SamplingParams

    params = [SamplingParams(max_new_tokens=n, temperature=1.0) for _, n in work]
    outs = engine.generate_batch([p for p, _ in work], params)
    return sum(len(o.token_ids) for o in outs)


def breakdown(engine: Any, work: list[tuple[list[int], int]]) -> dict[str, Any]:
    """A second engine run with the prefill and decode-step calls timed and their shapes
    recorded (diagnostics), and the floor of those very shapes (`_phases.py`)."""
    phases = Phases(engine)
    _, total = timed(run_engine, engine, work)
    spent = phases.spent()
    out: dict[str, Any] = {
        "prefill_s": spent["prefill_s"],
        "decode_s": spent["decode_s"],
        "decode_steps": spent["decode_steps"],
        "total_s": total,
        "ms_per_decode_step": spent["ms_per_decode_step"],
    }
    floors = {k: round(v, 5) for k, v in phases.floors().items()}  # a quick run's are ~1 ms
    return {k: round(v, 3) for k, v in out.items()} | {
        "prefill_calls": phases.prefills,
        "floor": floors,
    }


def timed(fn: Any, *args: Any) -> tuple[int, float]:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    tokens = fn(*args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return tokens, time.perf_counter() - start


def median_run(runs: list[tuple[int, float]]) -> tuple[int, float]:
    """The run with the median time (every run generates the same token count)."""
    return sorted(runs, key=lambda r: r[1])[len(runs) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="smollm2 | tiny | qwen2.5-0.5b-random")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--batch", type=int, default=32, help="HF batch and engine max_batch")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply all lengths")
    parser.add_argument("--quick", action="store_true", help="8 prompts, lengths x0.25")
    parser.add_argument(
        "--compile", action="store_true", help="engine.compile_decode (torch.compile the step)"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="timed runs per side; the median is reported"
    )
    parser.add_argument(
        "--out", type=Path, help="result file (default: results/engine_vs_hf_<device>.json)"
    )
    parser.add_argument(
        "--weights", nargs="+", default=["dense"], help="engine.weights, each side by side"
    )
    parser.add_argument("--no-hf", action="store_true", help="skip HF generate")
    parser.add_argument("--profile", action="store_true", help="profile each engine (_profile)")
    args = parser.parse_args()
    if args.quick:
        args.prompts, args.scale = 8, 0.25

    import torch

    torch.manual_seed(0)
    model = build_model(args.model, args.device, args.dtype)
    work = workload(args.prompts, model.config.vocab_size, args.scale)
    engines = {w: engine_side(copy.deepcopy(model), work, args, w) for w in args.weights}
    first = engines[args.weights[0]]
    result: dict[str, Any] = {
        "model": args.model,
        "device": args.device,
        "dtype": args.dtype,
        "prompts": args.prompts,
        "scale": args.scale,
        "repeats": args.repeats,
        "prompt_tokens": sum(len(p) for p, _ in work),
        "engine": first,
        "engines": engines,
        "machine": machine("transformers") | cpu_flags(),
    }
    if len(engines) > 1:
        base = first["tokens_per_s"]
        result["throughput_vs_first"] = {
            w: round(e["tokens_per_s"] / base, 3) for w, e in engines.items()
        }
    if not args.no_hf:
        if args.repeats > 1:  # HF gets the same warm-up before its timed runs
            run_hf(model, work[:2], args.batch)
        h_runs = [timed(run_hf, model, work, args.batch) for _ in range(args.repeats)]
        h_tokens, h_s = median_run(h_runs)
        result["hf"] = {
            "tokens": h_tokens,
            "seconds": round(h_s, 3),
            "tokens_per_s": round(h_tokens / h_s, 2),
            "runs_s": [round(t, 3) for _, t in h_runs],
        }
        result["ratio"] = round(first["tokens_per_s"] / result["hf"]["tokens_per_s"], 3)
    device = args.device.split(":")[0] + ("_compile" if args.compile else "")
    out = args.out or RESULTS / f"engine_vs_hf_{device}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for w, e in engines.items():  # the profiles' op tables beside the result
        tables = e.get("profile", {}).pop("tables", None)
        if tables:
            text = "\n\n".join(f"== {k} ==\n{v}" for k, v in tables.items())
            out.with_name(f"{out.stem}_profile_{w}.txt").write_text(text + "\n")
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    for w, e in engines.items():
        f = e["breakdown"]["floor"]
        print(
            f"{w}: engine_tps={e['tokens_per_s']:.2f} decode_{f['full_batch_rows']}rows="
            f"{f['full_batch_multiple']:.2f}x_floor decode={f['decode_multiple']:.2f}x "
            f"prefill={f['prefill_multiple']:.2f}x_floor; with attention's least work: "
            f"decode={f['decode_multiple_with_kv']:.2f}x prefill="
            f"{f['prefill_multiple_with_attention']:.2f}x"
        )
    if "hf" in result:
        print(
            f"engine_tps={first['tokens_per_s']:.2f} hf_tps={result['hf']['tokens_per_s']:.2f} "
            f"ratio={result['ratio']:.2f}"
        )


def engine_side(model: Any, work: list[tuple[list[int], int]], args: Any, weights: str) -> dict:
    """One engine (on its own copy of the model: int8 replaces its layers) timed, broken
    down against its floor and, with --profile, profiled."""
    from shadowrl.inference.cuda_graphs import GraphStep

    engine = make_engine(model, work, args.batch, args.compile, weights)
    start = time.perf_counter()
    engine.start()  # a serving engine's startup: CUDA graphs are captured here
    startup_s = time.perf_counter() - start
    run_engine(engine, work[:2])  # warm up kernels and allocators
    runs = [timed(run_engine, engine, work) for _ in range(args.repeats)]
    phases = breakdown(engine, work)
    engine.stop()
    tokens, seconds = median_run(runs)
    side: dict[str, Any] = {
        "weights": weights,
        "precision": engine.precision.name,
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "tokens_per_s": round(tokens / seconds, 2),
        "runs_s": [round(t, 3) for _, t in runs],
        "startup_s": round(startup_s, 3),
        "decode_step": type(engine.stepper).__name__,
        "compile_decode": args.compile,
        "cuda_graphs": len(engine.stepper.graphs) if isinstance(engine.stepper, GraphStep) else 0,
        "breakdown": phases,
    }
    if args.profile:
        side["profile"] = profile_engine(engine, [p for p, _ in work[: args.batch]])
    return side


if __name__ == "__main__":
    main()
