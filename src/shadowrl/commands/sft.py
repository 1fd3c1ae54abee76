"""`shadowrl sft`: the warm start alone (expert demonstrations through the real harness)."""

from __future__ import annotations

import argparse

from shadowrl.commands.config import Config, train_run
from shadowrl.commands.train import add_args as add_args
from shadowrl.commands.train import start_run_dir


def run(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.models import load_model
    from shadowrl.pipeline import warm_start

    run_dir = start_run_dir(args, config)
    model, tokenizer = load_model(config.model, config.train.dtype, config.seed)
    warm_start(model, tokenizer, train_run(config))
    print(f"SFT checkpoint: {run_dir / 'sft'}")
    return 0
