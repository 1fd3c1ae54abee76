"""`shadowrl train`, the main job: SFT, eval, [screen], asynchronous RL, eval, report.

The stages live in `shadowrl.pipeline.stages`; this module starts (or resumes) the
run directory and hands the pipeline its typed `TrainRun`. Rerunning the same command
resumes; `--fresh` starts over.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import yaml

from shadowrl.commands.config import Config, train_run
from shadowrl.commands.errors import UsageError


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in run_dir (default: also when it exists)",
    )
    p.add_argument("--fresh", action="store_true", help="delete run_dir first")
    p.add_argument(
        "--backend",
        choices=["local", "ray"],
        help="where RL's services run (the config's `backend`): 'ray' puts the trainer, "
        "engines and environment workers on the Ray cluster at --ray.address",
    )


def start_run_dir(args: argparse.Namespace, config: Config) -> Path:
    """`run_dir` created (emptied first with --fresh), with the run's config.yaml in it."""
    run_dir = Path(config.run_dir)
    if args.fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    dump = yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
    (run_dir / "config.yaml").write_text(dump)
    return run_dir


def _need_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError as e:
        raise UsageError("--backend=ray needs Ray: pip install 'shadowrl[ray]'") from e


def _same_temperature(config: Config) -> None:
    """RL's importance ratios compare the trainer's log π with the engine's: both must
    be of the one distribution the rollouts were drawn from."""
    agent, train = config.agent.temperature, config.train.temperature
    if config.train.steps and agent != train:
        raise UsageError(
            f"RL samples at agent.temperature={agent} but the trainer scores at "
            f"train.temperature={train}: set both to the same value"
        )


def _local_only(config: Config) -> None:
    """What the Ray backend lacks yet: the KL term's reference model (a frozen copy of the
    start, kept by an in-process trainer) and probed groups (`rl/probe.py`)."""
    train = config.train
    if not train.steps or config.backend != "ray":
        return
    if train.loss.kl_coef > 0:
        raise UsageError("train.loss.kl_coef > 0 runs on the local backend only (not on Ray)")
    if train.probe:
        raise UsageError("train.probe runs on the local backend only (not on Ray)")


def run(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.models import load_model
    from shadowrl.pipeline import train_pipeline

    if args.backend:
        config = config.model_copy(update={"backend": args.backend})
    if config.backend == "ray":
        _need_ray()
    _same_temperature(config)
    _local_only(config)
    start_run_dir(args, config)
    model, tokenizer = load_model(config.model, config.train.dtype, config.seed)
    report = train_pipeline(model, tokenizer, train_run(config))
    print(f"report: {report}")
    return 0
