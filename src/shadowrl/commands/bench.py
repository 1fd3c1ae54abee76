"""`shadowrl bench grow`: failed production sessions become a new version of the pinned suite.

    shadowrl bench grow --into runs/bench/easy-heldout            # from serve.traces
    shadowrl bench grow --into DIR --suite easy:heldout --tests supplied.jsonl

The first run writes the pinned suite (`--suite`, default `realtime.suite`) as version
1; each run after appends the validated candidates of failed sessions as the next
version (`realtime/grow.py`). Evaluate a version as `--suite DIR/v0002.jsonl:heldout`
(or set `realtime.suite` to it): its pins carry the version, and the gate refuses to
compare results of different versions.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from shadowrl.commands.config import Config, episode_spec
from shadowrl.commands.errors import UsageError

if TYPE_CHECKING:
    from shadowrl.realtime import SuppliedTests


def add_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="bench_command", required=True)
    grow = sub.add_parser("grow", help="turn failed sessions into a new version of the suite")
    grow.add_argument("--into", required=True, help="the grown suite's directory")
    grow.add_argument("--suite", help="its first version (default: realtime.suite)")
    grow.add_argument("--traces", help="trace store URL (default: serve.traces)")
    grow.add_argument("--tests", help="JSONL of tests a person wrote for sessions (SuppliedTests)")
    grow.add_argument("--since", help="only sessions updated at or after this ISO time")


def supplied_tests(path: str | None) -> list[SuppliedTests]:
    from pydantic import ValidationError

    from shadowrl.realtime import SuppliedTests

    if path is None:
        return []
    out = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(SuppliedTests.model_validate_json(line))
            except ValidationError as e:
                raise UsageError(f"{path}:{n}: {e.errors()[0]['msg']}") from e
    return out


def run(args: argparse.Namespace, config: Config) -> int:
    import asyncio

    from shadowrl.commands.eval import load_eval_tasks, parse_suite
    from shadowrl.commands.keys import private_keys
    from shadowrl.commands.realtime import open_trace_store, traces_url
    from shadowrl.models import load_tokenizer
    from shadowrl.realtime import Found, grow_suite
    from shadowrl.tasks import load_suite

    rt = config.realtime
    suite = args.suite or rt.suite
    base = load_eval_tasks(suite)
    names = {parse_suite(suite)[0], parse_suite(rt.users.suite)[0]}
    sources = {t.instance_id: t for name in names for t in load_suite(name)}
    visible = {t.instance_id for t in load_eval_tasks(rt.users.suite)} | {
        i for i, t in sources.items() if t.split == "train"
    }
    since = datetime.fromisoformat(args.since) if args.since else None
    if args.traces:
        config = config.model_copy(
            update={"serve": config.serve.model_copy(update={"traces": args.traces})}
        )

    def show(f: Found) -> None:
        print(f"{f.session_id}: {f.why}" + (f" as {f.task.instance_id}" if f.task else ""))

    with open_trace_store(traces_url(config)) as store:
        path, found = asyncio.run(grow_suite(
            store.engine, Path(args.into), base, sources, visible, supplied_tests(args.tests),
            cache_dir=Path(config.tasks.cache_dir).expanduser(),
            tokenizer=load_tokenizer(config.model.path), spec=episode_spec(config), since=since,
            on_found=show, exclude_keys=private_keys(config),
        ))  # fmt: skip
    added = sum(f.task is not None for f in found)
    if path is None:
        print(f"{len(found)} failed sessions, none added: {args.into} unchanged")
    else:
        print(f"{len(found)} failed sessions, {added} added: wrote {path}")
    return 0
