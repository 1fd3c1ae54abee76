"""What fits where: per-rank memory of replicate, FSDP, HSDP and LoRA for real model
shapes, computed from the peaks `fsdp_memory.py` measured.

    .venv/bin/python benchmarks/fsdp_fit.py [benchmarks/results/fsdp_memory.json]

Per-rank memory of one step, states only (the sizes were measured at 16-token
trajectories: the activations of long sequences come on top, and are not modelled):

    replicate   M = c + a_r * P
    fsdp, hsdp  M = c_f + s * P / n + t * U
    lora        M = c + a_l * P

P: parameters; n: ranks one copy is sharded over (all of them under FSDP, a shard group
under HSDP: HSDP's per-rank memory is FSDP's over its group); s: bytes of weights,
gradients and AdamW moments per parameter, counted on the replica (8 in bf16); U: the
parameters FSDP holds unsharded at once, taken as the root unit (LM head and final
norm, gathered for the whole forward and backward) plus twice the largest other unit
(a decoder layer or the input embedding: the one computing and the one prefetched).
c and c_f (the process group's own buffers and threads on top) are intercepts, a_r,
t, a_l least-squares slopes through the measured sizes. Prints the constants, each measured size against the formula, and the table.

`--lower-bound {bfloat16,float32}` needs no measurement: c = t = 0 and the states
counted (s = 8 or 16 bytes per parameter; LoRA: the frozen weights, 2 or 4, plus the
adapters' own weights, gradients and moments), what no strategy can go under.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULT = Path(__file__).parent / "results" / "fsdp_memory.json"
GB = 1e9
MB = 2**20
# public configs: hidden, intermediate, layers, heads, kv heads, vocab, tied embeddings
SHAPES: dict[str, tuple[int, int, int, int, int, int, bool]] = {
    "Qwen2.5-1.5B": (1536, 8960, 28, 12, 2, 151936, True),
    "Qwen2.5-7B": (3584, 18944, 28, 28, 4, 152064, False),
    "Qwen2.5-14B": (5120, 13824, 48, 40, 8, 152064, False),
    "Qwen2.5-32B": (5120, 27648, 64, 40, 8, 152064, False),
    "Qwen2.5-72B": (8192, 29568, 80, 64, 8, 152064, False),
}
CARDS = {"24 GB": 24, "80 GB": 80, "141 GB": 141}


def counts(
    h: int, inter: int, layers: int, heads: int, kv: int, vocab: int, tied: bool
) -> tuple[int, int]:
    """(parameters, U) of a Llama-shaped model (biases ignored)."""
    kv_dim = h // heads * kv
    layer = 2 * h * h + 2 * h * kv_dim + 3 * h * inter + 2 * h
    embed = vocab * h
    root = (0 if tied else embed) + h  # the LM head (the tied embedding lives in the root)
    params = layers * layer + embed + root
    return params, root + 2 * max(layer, 0 if tied else embed)


def _slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope)."""
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if n > 1 else 0.0
    return my - slope * mx, slope


def fit(result: dict[str, Any]) -> dict[str, float]:
    sizes = [s for s in result["sizes"].values() if {"replicate", "fsdp"} <= s.keys()]
    ps = [float(s["params"]) for s in sizes]
    us = [float(counts(**_shape(s["model"]))[1]) for s in sizes]
    rep = [s["replicate"]["peak_mb"] * MB for s in sizes]
    c, a_r = _slope(ps, rep)
    r0 = sizes[-1]["replicate"]["ranks"][0]
    s_bytes = (r0["state_mb"] + r0["grad_mb"]) * MB / sizes[-1]["params"]
    n = sizes[0]["fsdp"]["world_size"]
    over = [s["fsdp"]["peak_mb"] * MB - s_bytes * p / n for s, p in zip(sizes, ps, strict=True)]
    c_f, t = _slope(us, over)
    lora = [s["lora"]["peak_mb"] * MB for s in sizes if "lora" in s]
    _, a_l = _slope(ps[: len(lora)], lora) if lora else (0.0, 0.0)
    return {"c": c, "c_f": c_f, "a_r": a_r, "s": s_bytes, "t": t, "a_l": a_l, "n_measured": n}


def _shape(model: dict[str, Any]) -> dict[str, Any]:
    return {"h": model["hidden_size"], "inter": model["intermediate_size"],
            "layers": model["num_hidden_layers"], "heads": model["num_attention_heads"],
            "kv": model["num_key_value_heads"], "vocab": model["vocab_size"], "tied": False}  # fmt: skip


def per_rank(k: dict[str, float], params: int, unit: int, n: int) -> dict[str, float]:
    """Per-rank GB of each strategy for a model of `params` (FSDP/HSDP over `n`)."""
    return {
        "replicate": (k["c"] + k["a_r"] * params) / GB,
        "fsdp": (k["c_f"] + k["s"] * params / n + k["t"] * unit) / GB,
        "lora": (k["c"] + k["a_l"] * params) / GB,
    }


def lora_params(h: int, inter: int, layers: int, heads: int, kv: int, *_: Any) -> int:
    """Adapter parameters of `train.lora`'s default (rank 16 on q/k/v/o/gate/up/down)."""
    kv_dim = h // heads * kv
    return 16 * layers * (2 * (h + h) + 2 * (h + kv_dim) + 3 * (h + inter))


def lower_bound(dtype: str) -> int:
    w = {"bfloat16": 2, "float32": 4}[dtype]
    print(f"states only, {dtype}: s = {4 * w} B/param (weight, gradient, 2 AdamW moments); "
          f"LoRA: {w} B/param frozen + {4 * w} B per adapter parameter")  # fmt: skip
    print("\n| model | P | replicate | FSDP/HSDP n=8 | n=64 | LoRA (replicated base) |")
    print("|---|---|---|---|---|---|")
    for name, shape in SHAPES.items():  # GB per rank
        p, a = counts(*shape)[0], lora_params(*shape)
        row = [4 * w * p, 4 * w * p / 8, 4 * w * p / 64, w * p + 4 * w * a]
        cells = [f"≥ {m / GB:.1f}" + _ruled_out(m / GB) for m in row]
        print(f"| {name} | {p / 1e9:.1f}B | " + " | ".join(cells) + " |")
    return 0


def _ruled_out(gb: float) -> str:
    """A lower bound fits nowhere for sure; it rules out the cards below it."""
    out = [c for c, size in CARDS.items() if gb > size]
    return f" (not on {', '.join(out)})" if out else ""


def _fits(gb: float) -> str:
    return ", ".join(c for c, size in CARDS.items() if gb <= size) or "none"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--lower-bound"]:
        return lower_bound(argv[1])
    result = json.loads(Path(argv[0] if argv else RESULT).read_text())
    k = fit(result)
    print(f"c = {k['c'] / MB:.0f} MB, c_f = {k['c_f'] / MB:.0f} MB, "
          f"a_r = {k['a_r']:.2f} B/param, s = {k['s']:.2f} B/param, "
          f"t = {k['t']:.2f} B per unsharded param, a_l = {k['a_l']:.2f} B/param")  # fmt: skip
    print(
        "\n| measured | P | replicate meas / formula | FSDP n=2 meas / formula | LoRA meas / formula |"
    )
    print("|---|---|---|---|---|")
    for name, s in result["sizes"].items():
        p, u = counts(**_shape(s["model"]))
        f = per_rank(k, p, u, 2)
        cells = [f"{s[a]['peak_mb'] * MB / GB:.2f} / {f[a]:.2f}" if a in s else "—"
                 for a in ("replicate", "fsdp", "lora")]  # fmt: skip
        print(f"| {name} | {p / 1e9:.2f}B | " + " | ".join(cells) + " |")
    print("\n| model | P | replicate | FSDP/HSDP n=8 | n=64 | LoRA (replicated base) |")
    print("|---|---|---|---|---|---|")
    for name, shape in SHAPES.items():
        p, u = counts(*shape)
        row = [per_rank(k, p, u, 1)["replicate"], per_rank(k, p, u, 8)["fsdp"],
               per_rank(k, p, u, 64)["fsdp"], per_rank(k, p, u, 1)["lora"]]  # fmt: skip
        fits = [_fits(m) for m in row]
        print(
            f"| {name} | {p / 1e9:.1f}B | "
            + " | ".join(f"{m:.1f} ({f})" for m, f in zip(row, fits, strict=True))
            + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
