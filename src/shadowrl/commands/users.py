"""`shadowrl users simulate`: simulated users working with a served agent, giving feedback.

    shadowrl users simulate --server http://127.0.0.1:8000 --suite easy:train --sessions 20

Each user opens a session on a task of the suite, lets the agent work through the
server, then accepts, rejects, keeps lines, follows up or stays silent as
`realtime.users` says (`realtime/users.py`); deterministic by `realtime.users.seed`.
"""

from __future__ import annotations

import argparse
import logging
from collections import Counter
from pathlib import Path

from shadowrl.commands.config import Config, episode_spec


def add_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="users_command", required=True)
    sim = sub.add_parser("simulate", help="run N simulated user sessions against a server")
    sim.add_argument("--server", required=True, help="server URL, e.g. http://127.0.0.1:8000")
    sim.add_argument("--suite", help="tasks users bring (default: realtime.users.suite)")
    sim.add_argument("--sessions", type=int, default=8, help="sessions to run (default 8)")
    sim.add_argument("--prefix", default="sim", help="session ids are PREFIX-000, PREFIX-001, ...")


def run(args: argparse.Namespace, config: Config) -> int:
    import asyncio

    from shadowrl.commands.eval import load_eval_tasks
    from shadowrl.models import load_tokenizer
    from shadowrl.realtime.users import UserOutcome, Users

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request drowns progress

    cfg = config.realtime.users
    tasks = load_eval_tasks(args.suite or cfg.suite, cfg.limit)
    users = Users(
        args.server.rstrip("/"), tasks, episode_spec(config), load_tokenizer(config.model.path),
        cfg, Path(config.tasks.cache_dir).expanduser(),
    )  # fmt: skip

    def show(o: UserOutcome) -> None:
        said = ", ".join(o.signals) or "silent"
        print(f"{o.session_id}: {o.task_id} resolved={o.resolved} v{o.version}: {said}")

    ids = [f"{args.prefix}-{i:03d}" for i in range(args.sessions)]
    outcomes = asyncio.run(users.run(ids, on_done=show))
    counts = Counter(s for o in outcomes for s in o.signals)
    print(f"{len(outcomes)} sessions, {sum(o.resolved for o in outcomes)} resolved; {dict(counts)}")
    return 0
