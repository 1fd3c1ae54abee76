"""`shadowrl users simulate`: simulated users working with the agent service, giving feedback.

    shadowrl users simulate --server http://127.0.0.1:8000 --suite easy:train --sessions 20

Each user checks a task of the suite out under the server's `serve.workspaces_root`
(`--workspaces`, default that config value: the server must run on this machine),
opens an agent session on it, lets the agent work, runs the task's hidden tests on its
diff, then applies and accepts, rejects, keeps lines, follows up or stays silent as
`realtime.users` says (`experiments/users.py`); deterministic by `realtime.users.population`.
"""

from __future__ import annotations

import argparse
import logging
from collections import Counter
from pathlib import Path

from shadowrl.commands.config import Config, episode_spec
from shadowrl.commands.errors import UsageError


def add_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="users_command", required=True)
    sim = sub.add_parser("simulate", help="run N simulated user sessions against a server")
    sim.add_argument("--server", required=True, help="server URL, e.g. http://127.0.0.1:8000")
    sim.add_argument("--suite", help="tasks users bring (default: realtime.users.suite)")
    sim.add_argument("--sessions", type=int, default=8, help="sessions to run (default 8)")
    sim.add_argument("--prefix", default="sim", help="users are PREFIX-000, PREFIX-001, ...")
    sim.add_argument(
        "--workspaces", help="the server's serve.workspaces_root (default: that config value)"
    )
    sim.add_argument("--api-key", help="an API key of the server, if it has serve.api_keys")


def run(args: argparse.Namespace, config: Config) -> int:
    import asyncio

    import httpx

    from shadowrl.commands.eval import load_eval_tasks
    from shadowrl.experiments import UserOutcome, Users

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request drowns progress

    root = args.workspaces or config.serve.workspaces_root
    if root is None:
        raise UsageError("users simulate needs the server's workspaces root: --workspaces DIR")
    cfg = config.realtime.users
    tasks = load_eval_tasks(args.suite or cfg.suite, cfg.limit)
    users = Users(
        args.server.rstrip("/"), tasks, Path(root).expanduser().resolve(), episode_spec(config),
        cfg, Path(config.tasks.cache_dir).expanduser(),
        headers={"Authorization": f"Bearer {args.api_key}"} if args.api_key else None,
    )  # fmt: skip

    def show(o: UserOutcome) -> None:
        said = ", ".join(o.signals) or "silent"
        print(f"{o.user} ({o.session_id}): {o.task_id} resolved={o.resolved} v{o.version}: {said}")

    ids = [f"{args.prefix}-{i:03d}" for i in range(args.sessions)]
    try:
        outcomes = asyncio.run(users.run(ids, on_done=show))
    except httpx.HTTPStatusError as e:
        raise UsageError(f"the server refused: {e.response.status_code} {e.response.text}") from e
    except httpx.TransportError as e:
        raise UsageError(f"cannot reach {args.server}: {e}") from e
    counts = Counter(s for o in outcomes for s in o.signals)
    print(f"{len(outcomes)} sessions, {sum(o.resolved for o in outcomes)} resolved; {dict(counts)}")
    return 0
