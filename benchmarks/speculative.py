"""Speculative decoding with self-distilled MTP heads vs plain decoding, side by side.

One run: distil heads on SmolLM2-135M for a bounded time (`--distill-s`, CPU) on its
own temperature-1 completions of code prompts from the `easy` suite's train split
(or reuse `--heads`), then decode code prompts from its held-out split with the same
engine with and without speculation (exact acceptance, always on), at batch 1 and 8,
greedy and at temperature 1, and report per setting: tokens/s both ways, the speedup,
τ (mean tokens a row gains per speculative step, drafts' cost counted since the
wall clock includes them), the acceptance per draft position, and whether the tokens
were identical (`exact`: the exact rule promises the non-speculative output). A third
engine runs the default config (`speculative.auto`: it measures both ways per batch
size and speculates only where that is cheaper): `auto_tok_s`, `auto_speculated_steps`.

    python benchmarks/speculative.py                      # SmolLM2, ~10 min on 2 cores
    python benchmarks/speculative.py --heads h.safetensors  # skip the distillation
    python benchmarks/speculative.py --quick              # tiny random model, smoke

Writes benchmarks/results/speculative.json (`--quick`: a temp-dir path from `--out`);
the last line (the last temperature, 1 by default) is `tau=.. accept_1=.. speedup_b1=.. speedup_b8=.. exact=..`.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path
from typing import Any

import torch

from _floor import Floor, cpu_flags
from _machine import machine

RESULTS = Path(__file__).parent / "results"


def decode(engine: Any, prompts: list[list[int]], batch: int, temp: float, new: int) -> dict:
    """Generate `new` tokens per prompt, `batch` requests at a time; time and counts."""
    from shadowrl.types import SamplingParams

    accepted = engine.speculator.accepted if engine.speculator else []
    before = list(accepted)
    tokens, start = [], time.perf_counter()
    for i in range(0, len(prompts), batch):
        chunk = prompts[i : i + batch]
        params = [
            SamplingParams(max_new_tokens=new, temperature=temp, seed=i + j, stop_token_ids=())
            for j in range(len(chunk))
        ]
        tokens += [list(g.token_ids) for g in engine.generate_batch(chunk, params)]
    seconds = time.perf_counter() - start
    hist = [a - b for a, b in zip(accepted, before, strict=True)]
    return {"seconds": seconds, "tokens": tokens, "hist": hist}


def acceptance(hist: list[int]) -> tuple[float, list[float]]:
    """τ and P(draft j accepted) per position from counts of steps by accepted drafts."""
    steps = sum(hist)
    if not steps:
        return 0.0, []
    tau = sum((n + 1) * c for n, c in enumerate(hist)) / steps
    per = [sum(hist[j:]) / steps for j in range(1, len(hist))]
    return tau, per


def setting(
    engines: tuple[Any, Any, Any], prompts: list[list[int]], batch: int, temp: float, new: int
) -> dict:
    plain, spec, auto = engines
    n = len(prompts)
    for engine in engines:  # warm-up: kernels and allocators, and `auto`'s first probes
        decode(engine, prompts[:1], 1, temp, 8)
    base = decode(plain, prompts, batch, temp, new)
    fast = decode(spec, prompts, batch, temp, new)
    chosen = decode(auto, prompts, batch, temp, new)
    tau, per = acceptance(fast["hist"])
    count = sum(len(t) for t in base["tokens"])
    return {
        "batch": batch,
        "temperature": temp,
        "requests": n,
        "tokens": count,
        "plain_tok_s": round(count / base["seconds"], 2),
        "spec_tok_s": round(sum(len(t) for t in fast["tokens"]) / fast["seconds"], 2),
        "speedup": round(base["seconds"] / fast["seconds"], 3),
        "auto_tok_s": round(sum(len(t) for t in chosen["tokens"]) / chosen["seconds"], 2),
        "auto_speculated_steps": sum(chosen["hist"]),
        "tau": round(tau, 3),
        "accept_per_position": [round(a, 3) for a in per],
        "exact": base["tokens"] == fast["tokens"] == chosen["tokens"],
    }


def timed(f: Any, repeats: int) -> float:
    """ms per call of `f`, after one warm-up call."""
    f()
    start = time.perf_counter()
    for _ in range(repeats):
        f()
    return round((time.perf_counter() - start) / repeats * 1e3, 2)


def step_costs(model: Any, heads: Any, k: int, b: int, repeats: int) -> dict[str, float]:
    """One batch size's draft (draft vocabulary vs full), decode and verify costs in ms."""
    from shadowrl.inference.forward import Decoder
    from shadowrl.inference.kv import ContiguousKV
    from shadowrl.inference.sampling import BatchSampling
    from shadowrl.inference.speculative import draft

    decoder, full_rows = Decoder(model), model.lm_head.weight.detach()
    rows = heads.draft_rows(full_rows)
    untruncated = copy.deepcopy(heads)
    untruncated.vocab = torch.empty(0, dtype=torch.long)
    long = torch.long
    params = BatchSampling(torch.ones(b), torch.zeros(b, dtype=long), torch.ones(b),
                           torch.arange(b), torch.zeros(b, dtype=long), filtered=False)  # fmt: skip
    hidden, token = torch.randn(b, model.config.hidden_size), torch.zeros(b, dtype=long)
    sh = decoder.shape
    cache = ContiguousKV(layers=sh.layers, slots=b, kv_heads=sh.kv_heads, head_dim=sh.head_dim,
                    capacity=256, max_capacity=256, dtype=full_rows.dtype,
                    device=full_rows.device)  # fmt: skip
    lengths, verify = torch.full((b,), 200, dtype=long), torch.zeros(b, k + 1, dtype=long)
    with torch.inference_mode():
        return {
            "draft_vocab_ms": timed(
                lambda: draft(heads, decoder, hidden, token, params, k=k, rows=rows), repeats
            ),
            "full_vocab_ms": timed(
                lambda: draft(untruncated, decoder, hidden, token, params, k=k, rows=full_rows),
                repeats,
            ),
            "decode_step_ms": timed(lambda: decoder.decode(token, lengths, cache, 201), repeats),
            "verify_ms": timed(
                lambda: decoder.lm_head(decoder.extend(verify, lengths, cache, 201 + k)), repeats
            ),
        }


def draft_cost(model: Any, heads: Any, k: int, repeats: int = 10) -> dict:
    """ms per draft of k tokens (the heads + their LM-head products + selection, T=1) with
    the heads' draft vocabulary vs the full one, beside one plain decode step and one
    verify of k+1 tokens (logits included), at a 200-token context, at b1 and b8."""
    costs = {f"b{b}": step_costs(model, heads, k, b, repeats) for b in (1, 8)}
    return {"draft_vocab": int(heads.vocab.numel()) or None, **costs}


def heads_for(model: Any, tok: Any, args: argparse.Namespace) -> tuple[Any, dict]:
    from shadowrl.inference.engine import Engine
    from shadowrl.inference.mtp import load_heads, save_heads
    from shadowrl.rl.mtp_config import DistillConfig
    from shadowrl.rl.mtp_distill import (
        backbone_states,
        distill,
        fresh_heads,
        own_generations,
        split_sequences,
        suite_prompts,
    )

    if args.heads and Path(args.heads).is_file():
        return load_heads(args.heads), {"heads": args.heads, "distilled_here": False}
    cfg = DistillConfig(
        prompts=args.distill_prompts, samples_per_prompt=1, new_tokens=args.distill_tokens,
        steps=10**6, time_budget_s=args.distill_s, k=args.k, draft_vocab=args.draft_vocab,
    )  # fmt: skip
    start = time.perf_counter()
    with Engine(model, tok) as engine:
        seqs = own_generations(engine, suite_prompts(tok, "easy", cfg.prompts), cfg)
    gen_s = time.perf_counter() - start
    train_seqs, held = split_sequences(seqs, cfg.heldout_fraction)
    train, heldout = backbone_states(model, train_seqs, cfg.k), backbone_states(model, held, cfg.k)
    info: dict[str, Any] = {"distilled_here": True, "generate_s": round(gen_s, 1)}
    heads = fresh_heads(model, cfg, train_seqs)
    report = distill(heads, model, train, heldout, cfg)
    info["distill"] = report.__dict__
    if args.ablation:  # the same data and the same number of steps for Medusa-style heads
        medusa_cfg = cfg.model_copy(update={"kind": "medusa", "steps": report.steps,
                                            "time_budget_s": 0.0})  # fmt: skip
        medusa = fresh_heads(model, medusa_cfg, train_seqs)
        info["kind_ablation"] = {
            "sequential": report.heldout,
            "medusa": distill(medusa, model, train, heldout, medusa_cfg).heldout,
            "steps": report.steps,
        }
    if args.heads:
        save_heads(heads, args.heads)
        info["heads"] = args.heads
    return heads, info


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny random model, tiny budgets")
    p.add_argument("--heads", help="heads file: reused if it exists, else written after distilling")
    p.add_argument("--k", type=int, default=3, help="draft tokens per step")
    p.add_argument("--distill-s", type=float, default=300.0, help="distillation time budget")
    p.add_argument("--distill-prompts", type=int, default=24)
    p.add_argument("--distill-tokens", type=int, default=128)
    p.add_argument("--draft-vocab", type=int, default=4096, help="draft vocabulary (0 = full)")
    p.add_argument("--ablation", action="store_true", help="also train Medusa-style heads")
    p.add_argument("--prompts", type=int, default=8, help="held-out prompts decoded")
    p.add_argument("--new", type=int, default=40, help="tokens generated per request")
    p.add_argument("--out", type=Path, help="result file (default: results/speculative.json)")
    p.add_argument("--drafter", choices=("mtp", "ngram"), default="mtp")
    p.add_argument(
        "--episodes", nargs="*", default=[],
        help="ngram: `shadowrl run --save` files; their turns' prompts are decoded",
    )  # fmt: skip
    p.add_argument("--batch1-prompts", type=int, default=2, help="prompts decoded at batch 1")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8], choices=(1, 8))
    p.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    p.add_argument("--weights", default="dense", help="engine.weights of all three engines")
    args = p.parse_args()
    if args.quick:
        args.distill_s, args.distill_prompts, args.distill_tokens = 5.0, 4, 24
        args.prompts, args.new = 2, 8

    from shadowrl.inference.config import EngineConfig, SpeculativeConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import ModelConfig, load_model, tiny_model
    from shadowrl.rl.mtp_distill import suite_prompts

    model, tok = tiny_model(seed=0) if args.quick else load_model(ModelConfig())
    heads, info = None, dict[str, Any]()
    if args.drafter == "mtp":
        heads, info = heads_for(model, tok, args)
        info["draft_cost"] = draft_cost(model, heads.to(next(model.parameters()).dtype), args.k)
        print(json.dumps({"heads": info}, default=str), flush=True)  # kept if cut short
    if args.episodes:
        prompts = episode_prompts(args.episodes, args.prompts)
    else:
        prompts = suite_prompts(tok, "easy", args.prompts, split="heldout")
    drafts = {"drafter": args.drafter, "k": args.k}
    spec_cfg = SpeculativeConfig(**drafts, max_batch=8, auto=False)  # always on, to measure
    auto_cfg = SpeculativeConfig(**drafts, max_batch=8)  # the default: measured on/off
    # No prefix cache: agent turns extend earlier turns' prompts, and a hit would reuse KV
    # that each engine computed its own way (decode vs verify: float rounding), so sampled
    # rows could differ by rounding rather than by the acceptance rule.
    base = {"max_batch": 8, "prefix_cache_tokens": 0, "weights": args.weights}

    def own(m: Any) -> Any:  # int8/fp8 replace the model's layers: one copy per engine
        return m if args.weights == "dense" else copy.deepcopy(m)

    engines = (
        Engine(own(model), tok, EngineConfig(**base)).start(),
        Engine(own(model), tok, EngineConfig(**base, speculative=spec_cfg), heads=heads).start(),
        Engine(own(model), tok, EngineConfig(**base, speculative=auto_cfg), heads=heads).start(),
    )
    try:
        rows = [
            setting(
                engines, prompts[: args.batch1_prompts if batch == 1 else 8], batch, temp, args.new
            )
            for temp in args.temperatures
            for batch in args.batches
        ]
    finally:
        for engine in engines:
            engine.stop()
    result = {
        "model": "tiny" if args.quick else "smollm2",
        "k": args.k,
        "acceptance": "exact",
        "drafter": args.drafter,
        "weights": args.weights,
        "traffic": args.episodes or "easy heldout code prompts",
        "prompt_tokens": [len(p) for p in prompts],
        "floor_1_row_ms": round(Floor(model).ms(1), 2),
        "workload": {k: v for k, v in vars(args).items() if k not in ("quick", "out", "heads")},
        "heads": info,
        "settings": rows,
        "machine": machine() | cpu_flags(),
    }
    out = args.out or RESULTS / "speculative.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    for r in rows:
        print(json.dumps(r))
    t1 = {r["batch"]: r for r in rows if r["temperature"] == args.temperatures[-1]}
    first = t1[min(t1)]
    accept_1 = (first["accept_per_position"] or [0.0])[0]
    speedups = " ".join(f"speedup_b{b}={r['speedup']:.2f}" for b, r in sorted(t1.items()))
    exact = all(r["exact"] for r in rows)
    print(f"tau={first['tau']:.2f} accept_1={accept_1:.2f} {speedups} exact={str(exact).lower()}")


def episode_prompts(paths: list[str], n: int) -> list[list[int]]:
    """The context before each model turn of saved episodes (`shadowrl run --save`), in
    order: what the engine was asked to continue on real agent traffic."""
    prompts: list[list[int]] = []
    for path in paths:
        for seg in json.loads(Path(path).read_text())["segments"]:
            ids, mask = seg["token_ids"], seg["loss_mask"]
            prompts += [ids[:i] for i in range(1, len(ids)) if mask[i] and not mask[i - 1]]
    return prompts[:n]


if __name__ == "__main__":
    main()
