"""CPU decode steps with each layer in one C call vs PyTorch's layers, side by side (issue 34).

Eight engines over copies of one model hold the same batch of random prompts, all with
the C attention kernel: `layers` runs each decoder layer in one C call
(`engine.cpu_decode: native`, which uses the C products inside), `products` PyTorch's
layers around the C products (`cpu_products: native`), `torch` PyTorch's layers and
products (the default), `layers_bf16_kv` the C layers over a bf16 KV cache under the
same fp32 weights (`engine.kv_dtype: bfloat16`), whose floor with the KV counts the bf16
read, `layers_paged` and `products_paged` the first two over the paged cache
(`engine.kv: paged`; the C layer reads the pool through the block table), and
`layers_bf16` and `torch_bf16` a bf16 engine (`engine.dtype: bfloat16`: weights and KV in
bf16) with the C layers (fp32 maths over the bf16 weights) and with PyTorch's bf16 layers.
`--modes` times a subset (the first named is the one the ratios divide by; the floors are
its engine's). Their decode steps (fp32 weights) are timed in alternation as
`cpu_attention.py` times its two (`--steps` at a time, `--repeats` times, medians), and
set against the floor of the model's matrix products at that batch and against that floor
plus reading the batch's KV cache once (`_floor.py`). The fused layers take 1-64 rows; at
more a step runs PyTorch's layers in every engine.

    python benchmarks/cpu_decode.py --rows 1 8 16 32 64 --context 300 1500
"""

from __future__ import annotations

import json
from pathlib import Path

from _floor import cpu_flags
from _machine import machine
from cpu_attention import measure, parser, quick

RESULTS = Path(__file__).parent / "results" / "cpu_decode.json"
FUSED = {"cpu_decode": "native", "cpu_products": "native", "cpu_attention": "native"}
MODES = {
    "layers": FUSED,
    "products": {"cpu_products": "native", "cpu_attention": "native"},
    "torch": {"cpu_attention": "native"},
    "layers_bf16_kv": {**FUSED, "kv_dtype": "bfloat16"},
    "layers_paged": {**FUSED, "kv": "paged"},
    "products_paged": {"cpu_products": "native", "cpu_attention": "native", "kv": "paged"},
    "layers_bf16": {**FUSED, "dtype": "bfloat16"},
    "torch_bf16": {"cpu_attention": "native", "dtype": "bfloat16"},
}


def main() -> None:
    p = parser(__doc__, [1, 8, 16, 32], RESULTS)
    p.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    args = p.parse_args()
    model = quick(args)
    modes = {mode: MODES[mode] for mode in args.modes}
    started = machine() | cpu_flags()
    cases = []
    for rows in args.rows:
        case = measure(model, rows, "float32", args, modes)
        cases.append(case)
        first = args.modes[0]
        ms, over = case["ms_per_step"], case[f"over_{first}"]
        floor, with_kv = case["multiple_of_floor"], case["multiple_of_floor_with_kv"]
        print(f"{rows:3d} rows: floor {case['floor_ms']:6.1f} ms + KV {case['kv_floor_ms']:6.1f} ms",
              flush=True)  # fmt: skip
        for mode in modes:
            print(f"    {mode:15s} {ms[mode]:7.1f} ms, over {first} {over[mode]:.2f}, "
                  f"{floor[mode]:.2f}x the floor ({with_kv[mode]:.2f}x with the KV)", flush=True)  # fmt: skip
    result = {
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "machine": started, "load_avg_1m_end": machine()["load_avg_1m"], "cases": cases,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(
        " ".join(
            f"{mode}_over_{args.modes[0]}_{c['rows']}rows={r:.2f}"
            for c in cases
            for mode, r in c[f"over_{args.modes[0]}"].items()
        )
    )


if __name__ == "__main__":
    main()
