"""Where an engine's decode step and prefill spend their time (torch.profiler).

Drives the engine by hand on the calling thread (admit a batch of prompts, then decode
steps), so the profiler sees every op, and sorts the ops' own time into what the step
must do (the Linear products), what it adds (attention over the KV cache, writing the
KV cache, sampling, the other elementwise ops) and what is not in any op: Python and
dispatch between kernels = the step's wall time minus the time inside ops. Run alone,
it profiles SmolLM2 at a batch of random prompts against the floor of its products:

    python benchmarks/_profile.py --rows 1 --prompt-tokens 800 --out results/profile_b1.json
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

import shadowrl.inference.step as step_module
from shadowrl.inference.native import NativeRows

CATEGORIES: dict[str, Callable[[str], bool]] = {
    "products": lambda op: op in ("aten::mm", "aten::addmm", "aten::_int_mm", "aten::bmm"),
    "attention": lambda op: "scaled_dot_product" in op,
    "kv_write": lambda op: "index_put" in op or op == "aten::index_copy_",
}


# The label of `engine.cpu_attention` 'native' calls (their few small aten ops inside are
# counted twice, in "attention" and in their own category: microseconds a step).
NATIVE = "native_attention"


def _labelled(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        with record_function(name):
            return fn(*args, **kwargs)

    return call


def _running(engine: Any, prompts: list[list[int]]) -> None:
    from shadowrl.types import SamplingParams

    params = SamplingParams(max_new_tokens=10**6, temperature=1.0)
    engine._pending = [engine._make_request(p, params, lambda _: None, None) for p in prompts]
    while engine._pending:
        engine._admit()


def _summary(prof: Any, wall_s: float, steps: int) -> dict[str, Any]:
    self_us: dict[str, float] = {"sampling_inclusive": 0.0}
    total_ops = 0.0
    for event in prof.key_averages():
        if event.key == "sampling":
            self_us["sampling_inclusive"] += event.cpu_time_total
            continue
        if event.key == NATIVE:  # the C kernel runs in no aten op: its label's whole time
            total_ops += event.cpu_time_total
            self_us["attention"] = self_us.get("attention", 0.0) + event.cpu_time_total
            continue
        if event.key.startswith("aten::") or event.key.startswith("quantized::"):
            total_ops += event.self_cpu_time_total
            name = next((c for c, match in CATEGORIES.items() if match(event.key)), "other_ops")
            self_us[name] = self_us.get(name, 0.0) + event.self_cpu_time_total
    per_step = {k: round(v / 1e3 / steps, 2) for k, v in self_us.items()}
    wall_ms = wall_s * 1e3 / steps
    per_step["python_and_dispatch"] = round(wall_ms - total_ops / 1e3 / steps, 2)
    return {"ms_per_step": round(wall_ms, 2), "split_ms_per_step": per_step}


def profile_engine(engine: Any, prompts: list[list[int]], steps: int = 6) -> dict[str, Any]:
    """Profile one batched prefill of `prompts` and `steps` decode steps of that batch."""
    original = step_module.select_with_entropy
    step_module.select_with_entropy = _labelled("sampling", original)
    decoder, rows = engine.decoder, engine.decoder.attend_rows
    if isinstance(rows, NativeRows):
        decoder.attend_rows = _labelled(NATIVE, rows)
        decoder.attend_rows.min_span = rows.min_span
    try:
        with torch.inference_mode():
            with profile(activities=[ProfilerActivity.CPU]) as prefill_prof:
                start = time.perf_counter()
                _running(engine, prompts)
                prefill_s = time.perf_counter() - start
            engine._decode()  # warm-up step, unprofiled
            with profile(activities=[ProfilerActivity.CPU]) as decode_prof:
                start = time.perf_counter()
                for _ in range(steps):
                    engine._decode()
                decode_s = time.perf_counter() - start
            threads = thread_sweep(engine)
    finally:
        step_module.select_with_entropy = original
        decoder.attend_rows = rows
        for request in engine._running:
            request.aborted = True
        engine._retire([(i, "abort") for i in range(len(engine._running))])
    table = decode_prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20)
    prefill_table = prefill_prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    return {
        "rows": len(prompts),
        "decode": _summary(decode_prof, decode_s, steps),
        "prefill": {"seconds": round(prefill_s, 3), **_summary(prefill_prof, prefill_s, 1)},
        "threads": threads,
        "tables": {"decode": table, "prefill": prefill_table},
    }


def thread_sweep(engine: Any, steps: int = 3) -> dict[str, float]:
    """ms per decode step of the running batch at 1 and at all intra-op threads."""
    out, default = {}, torch.get_num_threads()
    for threads in sorted({1, default}):
        torch.set_num_threads(threads)
        engine._decode()
        start = time.perf_counter()
        for _ in range(steps):
            engine._decode()
        out[f"threads_{threads}_ms"] = round((time.perf_counter() - start) / steps * 1e3, 2)
    torch.set_num_threads(default)
    return out


def main() -> None:
    """Profile SmolLM2's engine alone at a batch of equal-length random prompts."""
    import argparse
    import json
    from pathlib import Path

    from _floor import Floor, cpu_flags
    from _machine import machine
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import ModelConfig, load_model, tiny_model

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--rows", type=int, default=1)
    p.add_argument("--prompt-tokens", type=int, default=800)
    p.add_argument("--weights", default="dense")
    p.add_argument("--quick", action="store_true", help="tiny random model")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    model, tok = tiny_model(seed=0) if args.quick else load_model(ModelConfig())
    engine = Engine(model, tok, EngineConfig(max_batch=args.rows, weights=args.weights))
    g = torch.Generator().manual_seed(0)
    prompts = [
        torch.randint(3, model.config.vocab_size, (args.prompt_tokens,), generator=g).tolist()
        for _ in range(args.rows)
    ]
    result = profile_engine(engine, prompts)
    tables = result.pop("tables")
    result["floor_ms"] = round(Floor(engine.model).ms(args.rows), 2)
    result["settings"] = vars(args) | {"out": str(args.out)}
    result["machine"] = machine() | cpu_flags()
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".txt").write_text(tables["decode"] + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
