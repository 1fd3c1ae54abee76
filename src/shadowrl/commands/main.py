"""The `shadowrl` command line: one entry point, one subcommand per job.

Every subcommand takes `--config FILE` (repeatable, merged left to right) and any
number of `--section.key=value` overrides of the config tree (`commands/config.py`).
Each command module is light to import (argparse and config models only) and imports
its heavy machinery inside `run`, so `shadowrl --help` stays instant. A user's mistake
prints one line and exits 2; `--debug` shows the traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from shadowrl.commands import (
    bench,
    deploy,
    export,
    gate,
    keys,
    mtp,
    realtime,
    replay,
    run,
    serve,
    sft,
    show,
    tasks,
    traces,
    train,
    users,
)
from shadowrl.commands import eval as eval_command
from shadowrl.commands.config import Config, load_config
from shadowrl.commands.errors import UsageError, describe_validation
from shadowrl.models import DeviceError, ModelPathError
from shadowrl.pipeline.config import PipelineError
from shadowrl.tasks import SuiteNotFound, TaskFileError


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, help line, argument adder and the function it runs."""

    name: str
    help: str
    add_args: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Config], int]


COMMANDS = (
    Command("run", "run one graded agent episode and print its transcript", run.add_args, run.run),
    Command("replay", "continue a saved episode (`run --save`) from one of its turns", replay.add_args, replay.run),
    Command("serve", "serve the policy behind an OpenAI-compatible HTTP API", serve.add_args, serve.run),
    Command("keys", "add, list and revoke the server's API keys", keys.add_args, keys.run),
    Command("eval", "run a pinned benchmark and write eval.json + report.md", eval_command.add_args, eval_command.run),
    Command("gate", "promote or reject a candidate eval against the incumbent", gate.add_args, gate.run),
    Command("tasks", "make, validate and export task suites", tasks.add_args, tasks.run),
    Command("sft", "warm-start the policy on expert demonstrations", sft.add_args, sft.run),
    Command("traces", "list, show and export the server's recorded traces", traces.add_args, traces.run),
    Command("export", "write a sharded (FSDP/HSDP) training checkpoint as a Hugging Face directory", export.add_args, export.run),
    Command("mtp", "self-distil MTP draft heads for speculative decoding", mtp.add_args, mtp.run),
    Command("train", "the main job: SFT, asynchronous RL, held-out eval, report", train.add_args, train.run),
    Command("realtime", "learn from production: collect, reward, train, gate, deploy or roll back", realtime.add_args, realtime.run),
    Command("deploy", "roll the live server back to the previous deployed checkpoint", deploy.add_args, deploy.run),
    Command("users", "simulated users who work with a served agent and give feedback", users.add_args, users.run),
    Command("bench", "grow the pinned suite from failed production sessions", bench.add_args, bench.run),
    Command("config", "print the whole config tree a run would use, as commented YAML", show.add_args, show.run),
)  # fmt: skip

# Errors whose message tells the user what to fix: printed as one line, exit 2.
USER_ERRORS = (UsageError, TaskFileError, SuiteNotFound, ModelPathError, DeviceError, PipelineError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shadowrl", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help)
        p.add_argument(
            "--config", action="append", default=[], help="YAML config file (repeatable)"
        )
        p.add_argument("--debug", action="store_true", help="show tracebacks of usage errors")
        command.add_args(p)
        p.set_defaults(command_run=command.run)
    return parser


def _one_line(err: BaseException) -> str:
    if isinstance(err, ValidationError):
        return f"invalid config: {describe_validation(err)}"
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    # stderr, so it never mixes into a command's output; the long commands log progress
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        config = load_config(args.config, rest)
        return int(args.command_run(args, config) or 0)
    except (*USER_ERRORS, ValidationError) as err:
        if args.debug:
            raise
        print(f"shadowrl {args.command}: error: {_one_line(err)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
