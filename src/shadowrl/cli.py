"""The `shadowrl` command line: one entry point, one subcommand per job.

Every subcommand takes `--config FILE` (repeatable, merged left to right) and any
number of `--section.key=value` overrides of the config tree (`shadowrl.config`).
Subcommand modules are imported lazily so `shadowrl --help` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence

# name -> (module, function, help). Each function takes (args, config) and returns an exit code.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("shadowrl.agent.cli", "cmd_run", "run one agent episode and print its transcript"),
    "serve": (
        "shadowrl.inference.serve_cli",
        "cmd_serve",
        "serve the policy behind an OpenAI-compatible HTTP API",
    ),
    "eval": (
        "shadowrl.eval.cli",
        "cmd_eval",
        "run a pinned benchmark and write eval.json + report.md",
    ),
    "gate": (
        "shadowrl.eval.cli",
        "cmd_gate",
        "promote or reject a candidate eval against the incumbent",
    ),
    "tasks": ("shadowrl.tasks.cli", "cmd_tasks", "make, validate and export task suites"),
    "sft": ("shadowrl.rl.train_cli", "cmd_sft", "warm-start the policy on expert demonstrations"),
    "train": (
        "shadowrl.rl.train_cli",
        "cmd_train",
        "the main job: SFT, asynchronous RL, held-out eval, report",
    ),
}


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", action="append", default=[], help="YAML config file (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shadowrl", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module, func, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_)
        _add_common(p)
        adder: Callable[[argparse.ArgumentParser], None] | None = getattr(
            importlib.import_module(module), f"add_{func[4:]}_args", None
        )
        if adder is not None:
            adder(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from shadowrl.config import load_config

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    try:
        config = load_config(args.config, rest)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        parser.error(str(e))
    # stderr, so it never mixes into a command's output; the long commands log progress
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    module, func, _ = COMMANDS[args.command]
    return int(getattr(importlib.import_module(module), func)(args, config) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
