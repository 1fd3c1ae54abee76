"""Prepared for a GPU session (issue 37, not yet run): MoE decode throughput and the paged
KV cache at long context, on one H200 in under 10 minutes.

1. `moe`: a random Qwen3-30B-A3B-shaped model (hidden 2048, 128 experts, top-8, expert
   width 768, 32/4 heads of 128, vocabulary 151,936) cut to `--moe-layers` layers, bf16,
   through the engine (MoE decodes eagerly: `inference/route_log.py`), each experts
   implementation of transformers ('eager': a loop over the experts hit, reading the
   routing back to the host; 'grouped_mm': one grouped GEMM): tokens/s at several batch
   sizes, every position's routes recorded.
2. `paged`: a random Qwen2.5-0.5B-shaped dense model, bf16, CUDA graphs on, the
   contiguous vs the paged cache (its default pool, and a pool cut to the blocks the run
   fills): decode step time at a long span (same batch, same tokens) and the bytes each
   allocates.

    python benchmarks/gpu/moe_paged.py --out docs/results/gpu     # both parts
    python benchmarks/gpu/moe_paged.py --parts paged --out /tmp   # one part

Writes <out>/moe_paged.json and prints one line per measurement.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

A3B = dict(hidden_size=2048, moe_intermediate_size=768, intermediate_size=6144, num_experts=128,
           num_experts_per_tok=8, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
           vocab_size=151936, norm_topk_prob=True, tie_word_embeddings=False,
           max_position_embeddings=32768, initializer_range=0.02)  # fmt: skip
QWEN_05B = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                max_position_embeddings=32768)  # fmt: skip


def rand(n: int, seed: int, vocab: int = 151936) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab, (n,), generator=g).tolist()


def moe(args: argparse.Namespace) -> list[dict[str, Any]]:
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.types import SamplingParams

    rows = []
    for impl in args.experts:
        config = Qwen3MoeConfig(
            num_hidden_layers=args.moe_layers, experts_implementation=impl, **A3B
        )
        with torch.device("cuda"):
            model = Qwen3MoeForCausalLM(config).to(torch.bfloat16).eval()
        params = sum(p.numel() for p in model.parameters())
        for batch in args.batches:
            engine = Engine(model, None, EngineConfig(max_batch=batch, max_seq_len=2048))
            prompts = [rand(args.prompt, i) for i in range(batch)]
            sampling = SamplingParams(max_new_tokens=args.new, temperature=1.0)
            engine.generate_batch(prompts[:1], SamplingParams(max_new_tokens=4))  # warm
            torch.cuda.synchronize()
            start = time.perf_counter()
            outs = engine.generate_batch(prompts, sampling)
            seconds = time.perf_counter() - start
            new = sum(len(o.token_ids) for o in outs)
            routed = all(len(o.routes) == args.prompt + len(o.token_ids) - 1 for o in outs)
            row = dict(part="moe", experts=impl, layers=args.moe_layers, params=params,
                       batch=batch, new_tokens=new, seconds=seconds, tok_s=new / seconds,
                       routes_complete=routed)  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
        del model
        torch.cuda.empty_cache()
    return rows


def paged(args: argparse.Namespace) -> list[dict[str, Any]]:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.types import SamplingParams

    with torch.device("cuda"):
        model = Qwen2ForCausalLM(Qwen2Config(**QWEN_05B)).to(torch.bfloat16).eval()
    rows = []
    held = args.long_batch * (args.long_context // 2) // 16  # blocks the run's tokens fill
    layouts = {"contiguous": 0, "paged": 0, "paged-budget": held + 2 * args.long_batch + 1}
    for name, blocks in layouts.items():
        kv = "paged" if blocks or name == "paged" else "contiguous"
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        config = EngineConfig(kv=kv, kv_blocks=blocks, max_batch=args.long_batch, max_seq_len=args.long_context,
                              cuda_graph_batch_sizes=[args.long_batch],
                              cuda_graph_spans=[args.long_context // 2, args.long_context],
                              prefix_cache_tokens=0)  # fmt: skip
        with Engine(model, None, config) as engine:
            kv_bytes = torch.cuda.memory_allocated() - before
            prompts = [
                rand(args.long_context // 2 - args.new - 1, i) for i in range(args.long_batch)
            ]
            sampling = SamplingParams(max_new_tokens=args.new, temperature=0.0)
            engine.generate_batch(prompts, sampling)  # warm (prefill dominated)
            steps: list[float] = []
            decode = engine.stepper.decode

            def timed(requests: Any, span: int, decode: Any = decode, steps: Any = steps) -> Any:
                torch.cuda.synchronize()
                start = time.perf_counter()
                out = decode(requests, span)
                steps.append(time.perf_counter() - start)
                return out

            engine.stepper.decode = timed  # type: ignore[method-assign]
            outs = engine.generate_batch(prompts, sampling)
        steps.sort()
        row = dict(part="paged", kv=name, kv_blocks=blocks, batch=args.long_batch, context=args.long_context,
                   kv_and_graph_bytes=kv_bytes, peak_bytes=torch.cuda.max_memory_allocated(),
                   step_median_s=steps[len(steps) // 2], steps=len(steps),
                   first_tokens=list(outs[0].token_ids[:8]))  # fmt: skip
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--parts", nargs="+", default=["moe", "paged"])
    p.add_argument("--moe-layers", type=int, default=8, help="of the 48 of Qwen3-30B-A3B")
    p.add_argument("--experts", nargs="+", default=["eager", "grouped_mm"])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--prompt", type=int, default=256)
    p.add_argument("--new", type=int, default=64)
    p.add_argument("--long-batch", type=int, default=16)
    p.add_argument("--long-context", type=int, default=16384)
    p.add_argument("--out", type=Path, default=Path("docs/results/gpu"))
    args = p.parse_args()
    parts = {"moe": moe, "paged": paged}
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "args": vars(args) | {"out": str(args.out)},
    }
    for name in args.parts:
        try:
            result[name] = parts[name](args)
        except Exception as error:  # one failing part must not hide the other
            result[name] = {"error": repr(error)}
            print(f"{name}: {error!r}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "moe_paged.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
