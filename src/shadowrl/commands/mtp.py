"""`shadowrl mtp distill`: train MTP draft heads on the model's own generations.

    shadowrl mtp distill --model smollm2 [--data sft|traces|rollouts] [--from FILE]
                         [--out PATH] [--mtp.time_budget_s=300] [--mtp.steps=600]

Writes `mtp.safetensors` beside the checkpoint (or to `--out`), which the engine then
loads for speculative decoding (`engine.speculative`), and prints the acceptance per
draft position on held-out generations. Settings: the `mtp` config section.
"""

from __future__ import annotations

import argparse
import json
import logging

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError
from shadowrl.seeds import stream_seed

log = logging.getLogger(__name__)


def add_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="mtp_command", required=True)
    d = sub.add_parser("distill", help="self-distil the draft heads (backbone frozen)")
    d.add_argument("--model", default=None, help="checkpoint to distil from (default model.path)")
    d.add_argument("--data", choices=["sft", "traces", "rollouts"], help="prompt source (mtp.data)")
    d.add_argument("--from", dest="source", help="trajectories JSONL for traces/rollouts")
    d.add_argument("--out", help="where to write the heads (default: beside the checkpoint)")


def run(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.inference import heads_path, save_heads
    from shadowrl.models import checkpoint_dir, load_model
    from shadowrl.rl import self_distill

    spec = args.model or config.model.path
    updates = {k: v for k, v in (("data", args.data), ("source", args.source)) if v}
    cfg = config.mtp.model_copy(update=updates)
    if cfg.data != "sft" and not cfg.source:
        raise UsageError(f"--data {cfg.data} needs --from FILE (a trajectories JSONL)")
    directory = checkpoint_dir(spec)
    out = args.out or (heads_path(directory) if directory is not None else None)
    if out is None:
        raise UsageError(f"model {spec!r} has no checkpoint directory: give --out PATH")
    where = config.model.model_copy(update={"path": spec})
    model, tokenizer = load_model(where, config.engine.weights_dtype, config.seed)
    every = max(1, cfg.steps // 20)

    def progress(step: int, metrics: dict[str, float]) -> None:
        if step % every == 0 or step == cfg.steps:
            shown = " ".join(f"{k}={v:.3f}" for k, v in metrics.items())
            log.info("mtp distill step %d/%d %s", step, cfg.steps, shown)

    try:
        seed = stream_seed(config.seed, "distill")
        heads, report = self_distill(model, tokenizer, cfg, config.engine, progress, seed)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(str(e)) from e
    path = save_heads(heads, out)
    print(json.dumps({"heads": str(path), **report.__dict__}, indent=1))
    for j in range(cfg.k):
        h = report.heldout
        print(f"position {j + 2}: top1={h['top1'][j]:.3f} chain={h['chain'][j]:.3f} "
              f"overlap={h['overlap'][j]:.3f} coverage={h['coverage'][j]:.3f}")  # fmt: skip
    return 0
