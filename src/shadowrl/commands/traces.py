"""`shadowrl traces`: read what the server recorded (`serve.traces`), and export it.

    shadowrl traces list [--since 2h]
    shadowrl traces show ID              # a session, request or response id
    shadowrl traces export --format training --out traces.jsonl [--since 2026-12-01]
    shadowrl traces export --format swebench --out preds.jsonl

`training` rows are token-level trajectories in the demo store's JSON shape (prompt
and generated ids, loss mask, logprobs, policy versions; see `serve/store/export.py`);
`swebench` rows are predictions for agent sessions that produced a diff. Sessions of a
private key of `serve.api_keys` are never exported (none is recorded; a store written
before that held may still hold some).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError

UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def add_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="traces_command", required=True)
    ls = sub.add_parser("list", help="sessions, most recently active first")
    ls.add_argument("--since", help="ISO time (UTC if no zone) or an age: 30m, 2h, 7d")
    ls.add_argument("--limit", type=int, default=50, help="most sessions to list (default 50)")
    show = sub.add_parser("show", help="one session: its requests, steps and feedback")
    show.add_argument("id", help="a session, request or response id")
    show.add_argument("--tokens", action="store_true", help="also print the token ids")
    ex = sub.add_parser("export", help="write JSONL for training or SWE-bench")
    ex.add_argument("--format", required=True, choices=["training", "swebench"])
    ex.add_argument("--since", help="ISO time (UTC if no zone) or an age: 30m, 2h, 7d")
    ex.add_argument("--out", help="output file (default: stdout)")


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """`--since`: an ISO date/time (naive means UTC) or an age like `90m`, `2h`, `7d`."""
    if text is None:
        return None
    if m := re.fullmatch(r"(\d+)([smhd])", text.strip()):
        return (now or datetime.now(UTC)) - timedelta(**{UNITS[m[2]]: int(m[1])})
    try:
        t = datetime.fromisoformat(text)
    except ValueError as e:
        raise UsageError(f"--since {text!r}: give an ISO time or an age like 2h or 7d") from e
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t


def run(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.commands.keys import private_keys
    from shadowrl.serve.store.db import StoreError, open_engine, resolve_url

    if config.serve.traces is None:
        raise UsageError("tracing is off (serve.traces is null): there is no store to read")
    try:
        engine = open_engine(resolve_url(config.serve.traces, config.run_dir), must_exist=True)
    except StoreError as e:
        raise UsageError(str(e)) from e
    try:
        if args.traces_command == "list":
            return list_command(engine, parse_since(args.since), args.limit)
        if args.traces_command == "show":
            return show_command(engine, args.id, args.tokens)
        since = parse_since(args.since)
        return export_command(engine, args.format, since, args.out, private_keys(config))
    finally:
        engine.dispose()


def list_command(engine: Any, since: datetime | None, limit: int) -> int:
    from shadowrl.serve.store.queries import list_sessions

    sessions = list_sessions(engine, since, limit)
    if not sessions:
        print("no sessions" + (f" since {since.isoformat()}" if since else ""))
        return 0
    print(
        f"{'session':36}  {'kind':5}  {'status':9}  {'last active (UTC)':19}  reqs  tokens  signals"
    )
    for s in sessions:
        when = s.updated_at.strftime("%Y-%m-%d %H:%M:%S")
        signals = ",".join(s.signals) or "-"
        print(
            f"{s.id:36}  {s.kind:5}  {s.status:9}  {when:19}  {s.requests:4}  "
            f"{s.generated_tokens:6}  {signals}"
        )
    return 0


def show_command(engine: Any, ident: str, tokens: bool) -> int:
    from shadowrl.serve.store.queries import get_session

    view = get_session(engine, ident)
    if view is None:
        raise UsageError(f"no session, request or response {ident!r} in the store")
    s = view.session
    print(f"session {s.id}  kind={s.kind}  status={s.status}  api_key={s.api_key_id or '-'}")
    print(f"  created {s.created_at.isoformat()}  last active {s.updated_at.isoformat()}")
    for label, value in (
        ("task", s.task),
        ("workspace", s.workspace),
        ("checkpoint", s.checkpoint),
    ):
        if value:
            print(f"  {label}: {value}")
    for r in view.requests:
        row = r.row
        exact = "" if r.token_exact else "  token_exact=false"
        print(
            f"request {r.id}  parent={r.parent_id or '-'}  prompt={len(r.prompt_ids)} "
            f"generated={len(r.generated_ids)}  finish={r.finish_reason}{exact}"
        )
        print(
            f"  T={row.temperature} top_p={row.top_p} seed={row.seed} "
            f"tool_calls={len(row.tool_calls or [])} checkpoint={r.checkpoint or '-'}"
        )
        if tokens:
            print(f"  prompt_ids: {list(r.prompt_ids)}")
            print(f"  generated_ids: {list(r.generated_ids)}")
            print(f"  versions: {list(r.versions)}")
    for st in view.steps:
        print(f"step {st.index}: {json.dumps(st.tool_calls)} -> {json.dumps(st.results)[:200]}")
    for f in view.feedback:
        value = "" if f.value is None else f" value={f.value}"
        print(f"feedback {f.signal}{value} at {f.at.isoformat()}")
    if s.diff:
        print("diff:\n" + s.diff)
    return 0


def export_command(
    engine: Any, fmt: str, since: datetime | None, out: str | None, private: frozenset[str]
) -> int:
    """Write the store's sessions as rows; never one of a private key (`private`)."""
    from shadowrl.serve.store.export import export_swebench, export_training

    export = export_training if fmt == "training" else export_swebench
    rows = export(engine, since, private)
    n = _write_jsonl(rows, out)
    where = out or "stdout"
    if n == 0 and fmt == "swebench":
        print(
            "refused: no agent session with a diff to export as SWE-bench predictions",
            file=sys.stderr,
        )
        return 1
    print(f"wrote {n} {fmt} rows to {where}", file=sys.stderr)
    return 0


def _write_jsonl(rows: Iterable[dict[str, Any]], out: str | None) -> int:
    n = 0
    with Path(out).open("w") if out else contextlib.nullcontext(sys.stdout) as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
            n += 1
    return n
