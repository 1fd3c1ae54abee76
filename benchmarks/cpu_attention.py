"""CPU decode steps with the C attention kernel vs PyTorch's SDPA, side by side (issue 34).

Two engines over copies of one model (`engine.cpu_attention` 'native' and 'torch') hold
the same batch of random prompts; their decode steps are timed in alternation, `--steps`
at a time, `--repeats` times, and the median ms per step is set against the floor of the
model's matrix products at that batch (`_floor.py`), in each dtype asked for:

    python benchmarks/cpu_attention.py --rows 8 32 --context 300 1500 --dtypes float32 bfloat16
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from _floor import Floor, KVFloor, cpu_flags
from _machine import machine
from _profile import _running
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.models import ModelConfig, load_model, tiny_model

RESULTS = Path(__file__).parent / "results" / "cpu_attention.json"
# Each mode is an engine's settings; the first is the one the ratios divide by.
MODES: dict[str, dict[str, str]] = {
    "native": {"cpu_attention": "native"},
    "torch": {"cpu_attention": "torch"},
}


def _prompts(rows: int, context: tuple[int, int], vocab: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(rows)
    lengths = torch.randint(context[0], context[1] + 1, (rows,), generator=g).tolist()
    return [torch.randint(3, vocab, (n,), generator=g).tolist() for n in lengths]


def _time_steps(engine: Engine, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        engine._decode()
    return (time.perf_counter() - start) / steps * 1e3


def measure(
    model: Any, rows: int, dtype: str, args: argparse.Namespace,
    modes: dict[str, dict[str, str]] = MODES,
) -> dict[str, Any]:  # fmt: skip
    """Median ms per decode step of each mode's engine at `rows` rows in `dtype`, the
    product floor and that floor plus reading the rows' KV once (`_floor.KVFloor`, at the
    prompts' lengths), and each mode's time over the first mode's."""
    engines = {
        mode: Engine(copy.deepcopy(model), None, EngineConfig(
            **{"max_batch": rows, "dtype": dtype, "prefix_cache_tokens": 0, **settings}))
        for mode, settings in modes.items()
    }  # fmt: skip
    prompts = _prompts(rows, args.context, model.config.vocab_size)
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    with torch.inference_mode():
        for engine in engines.values():
            _running(engine, prompts)
            engine._decode()  # warm-up
        for _ in range(args.repeats):
            for mode, engine in engines.items():
                times[mode].append(_time_steps(engine, args.steps))
    first = next(iter(modes))
    floor = Floor(engines[first].model).ms(rows)
    kv = KVFloor(engines[first].decoder.shape)
    # each mode's cache read at its own dtype (`engine.kv_dtype`, default the engine's)
    kv_ms = {mode: kv.ms(map(len, prompts), engines[mode].cache.dtype.itemsize) for mode in modes}
    ms = {mode: statistics.median(t) for mode, t in times.items()}
    for engine in engines.values():
        engine._running.clear()
    return {
        "rows": rows, "dtype": dtype, "ms_per_step": ms, "floor_ms": floor,
        "multiple_of_floor": {mode: v / floor for mode, v in ms.items()},
        "kv_floor_ms": kv_ms[first], "kv_floor_ms_by_mode": kv_ms, "stream_gbs": kv.gbs,
        "multiple_of_floor_with_kv": {mode: v / (floor + kv_ms[mode]) for mode, v in ms.items()},
        f"over_{first}": {mode: v / ms[first] for mode, v in ms.items()}, "all_ms": times,
    }  # fmt: skip


def parser(doc: str, rows: list[int], out: Path) -> argparse.ArgumentParser:
    """The options of a decode-step benchmark (this one's and `cpu_decode.py`'s)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=rows)
    p.add_argument("--context", type=int, nargs=2, default=[300, 1500], help="prompt lengths")
    p.add_argument("--steps", type=int, default=4, help="decode steps per timing")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="tiny random model, a smoke check")
    p.add_argument("--out", type=Path, default=out)
    return p


def quick(args: argparse.Namespace) -> Any:
    """The model to time: SmolLM2, or with `--quick` a tiny random one at 2 short rows."""
    if not args.quick:
        return load_model(ModelConfig())[0]
    args.rows, args.context, args.steps, args.repeats = [2], [20, 300], 1, 1
    return tiny_model(seed=0)[0]


def main() -> None:
    p = parser(__doc__, [1, 8, 32], RESULTS)
    p.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    args = p.parse_args()
    model = quick(args)
    if args.quick:
        args.dtypes = ["float32"]
    started = machine() | cpu_flags()
    cases = []
    for dtype in args.dtypes:
        for rows in args.rows:
            case = measure(model, rows, dtype, args)
            case["torch_over_native"] = case["over_native"]["torch"]
            cases.append(case)
            print(f"{dtype:9s} {rows:3d} rows: native {case['ms_per_step']['native']:7.1f} ms, "
                  f"torch {case['ms_per_step']['torch']:7.1f} ms, floor {case['floor_ms']:6.1f} ms"
                  f"  torch/native {case['torch_over_native']:.2f}", flush=True)  # fmt: skip
    result = {
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "machine": started, "load_avg_1m_end": machine()["load_avg_1m"], "cases": cases,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(" ".join(f"{c['dtype']}_{c['rows']}rows={c['torch_over_native']:.2f}" for c in cases))


if __name__ == "__main__":
    main()
