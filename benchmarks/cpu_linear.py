"""A CPU decode step's Linear products: PyTorch's F.linear vs the C kernel (issue 34).

Every Linear of the model (SmolLM2: 30 layers x 7 + the LM head = 211) is applied to an
[M, in] fp32 input, one after another, as a decode step of M rows does: by `F.linear` and
by `native.NativeLinear` (the engine's `engine.cpu_products: native`, Python call
included), in alternation, best of `--repeats` after a warm-up. Beside them: GB/s of
weights read, and the bandwidth floor, the time `torch.sum` takes to read every weight
once (as the kernel aims to), timed in the same alternation:

    python benchmarks/cpu_linear.py --rows 1 4 8 16 --repeats 10

`--isa avx2` runs both arms on their AVX2 paths on an AVX-512 CPU: PyTorch's, oneDNN's
and MKL's dispatch capped at AVX2 (`ISA_ENV`, set before torch starts: the script runs
itself again with them) and the kernel built with `-mno-avx512f`. It stands in for the
AVX2-only machines the project also runs on, but not for their memory system.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from _floor import _best_ms, cpu_flags
from _machine import machine
from shadowrl.inference.native import NativeLinear
from shadowrl.models import ModelConfig, load_model, tiny_model

RESULTS = Path(__file__).parent / "results" / "cpu_linear.json"
ISA_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
           "MKL_ENABLE_INSTRUCTIONS": "AVX2"}  # fmt: skip
KERNEL_FLAGS = {"native": (), "avx2": ("-mno-avx512f",)}


def measure(
    layers: list[nn.Linear], rows: int, repeats: int, flags: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Summed ms of every layer at `rows` rows, torch and native, and the floor: every
    weight read once (a `torch.sum` of each), timed in the same alternation."""
    wrapped = [NativeLinear(m, flags) for m in layers]
    inputs = {m.in_features: torch.randn(rows, m.in_features) for m in layers}
    arms: dict[str, Callable[[], object]] = {
        "torch": lambda: [F.linear(inputs[m.in_features], m.weight, m.bias) for m in layers],
        "native": lambda: [m(inputs[m.in_features]) for m in wrapped],
        "floor": lambda: [m.weight.sum() for m in layers],
    }
    for run in arms.values():
        run()  # warm-up
    best = {name: float("inf") for name in arms}
    for _ in range(repeats):  # alternate, so a busy second hits both arms alike
        for name, run in arms.items():
            best[name] = min(best[name], _best_ms(run, 1))
    size = sum(m.weight.numel() * 4 for m in layers)
    floor = best.pop("floor")
    return {
        "rows": rows, "ms": best, "torch_over_native": best["torch"] / best["native"],
        "gbs": {name: size / ms / 1e6 for name, ms in best.items()},
        "floor_ms": floor, "stream_gbs": size / floor / 1e6,
    }  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1, 4, 8, 16])
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="tiny random model, a smoke check")
    p.add_argument(
        "--isa",
        choices=list(KERNEL_FLAGS),
        default="native",
        help="'avx2': both arms on their AVX2 paths (see the module docstring)",
    )
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    if args.isa == "avx2" and any(os.environ.get(k) != v for k, v in ISA_ENV.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **ISA_ENV})
    if args.quick:
        args.rows, args.repeats = [1, 4], 2
    model, _ = tiny_model(seed=0) if args.quick else load_model(ModelConfig())
    model = model.float()
    layers = [m for m in model.modules() if isinstance(m, nn.Linear)]
    load = os.getloadavg()[0]
    started = machine() | cpu_flags()  # the flags and threads every CPU benchmark records
    cases = []
    with torch.inference_mode():
        for rows in args.rows:
            case = measure(layers, rows, args.repeats, KERNEL_FLAGS[args.isa])
            cases.append(case)
            ms = case["ms"]
            print(f"{rows:3d} rows: torch {ms['torch']:7.1f} ms, native {ms['native']:7.1f} ms "
                  f"({case['gbs']['native']:5.1f} GB/s), floor {case['floor_ms']:6.1f} ms  "
                  f"torch/native {case['torch_over_native']:.2f}", flush=True)  # fmt: skip
    one = next((c["ms"]["native"] for c in cases if c["rows"] == 1), None)
    result = {
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "isa_env": {k: os.environ.get(k) for k in ISA_ENV},
        "note": f"1-min load {load:.2f} at the start",
        "machine": started, "load_avg_1m_end": os.getloadavg()[0],
        "layers": len(layers), "weight_bytes": sum(m.weight.numel() * 4 for m in layers),
        "stream_gbs": max(c["stream_gbs"] for c in cases), "cases": cases,
        "native_over_1row": {c["rows"]: c["ms"]["native"] / one for c in cases} if one else {},
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{len(layers)} layers, {result['weight_bytes'] / 1e6:.0f} MB, torch.sum reads "
          f"{result['stream_gbs']:.1f} GB/s; {result['note']}")  # fmt: skip
    print(" ".join(f"{c['rows']}rows={c['torch_over_native']:.2f}" for c in cases))


if __name__ == "__main__":
    main()
