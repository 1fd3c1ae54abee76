"""`shadowrl realtime`: production sessions → rewards → train → pinned gate → deploy or roll back.

    shadowrl realtime --simulate-users                 # server, simulated users and cycles
    shadowrl realtime --config configs/realtime-tiny.yaml --simulate-users
    shadowrl realtime                                  # real users: wait for their sessions
    shadowrl realtime --simulate-users --backend ray   # pinned evals on the Ray evaluator

The server runs as its own process (started here, found again on a rerun); the cycle
logic is `realtime/cycle.py` and `realtime/stages.py`. Simulated users and what measures
learning from them (`experiments/`) are built here and handed to the loop through its
seam (`realtime/context.py`). A rerun resumes the cycle a kill interrupted. Writes
`<run_dir>/realtime/cycles.jsonl`, `report.md` and `cycles.png`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from shadowrl.commands.config import Config, episode_spec
from shadowrl.commands.errors import UsageError

if TYPE_CHECKING:
    from shadowrl.realtime import Brancher, Deps
    from shadowrl.serve.store import TraceStore
    from shadowrl.tasks import PreparedTask, Task


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--simulate-users",
        action="store_true",
        help="simulated users (realtime.users) bring the sessions; else wait for real ones",
    )
    p.add_argument("--cycles", type=int, help="override realtime.cycles")
    p.add_argument(
        "--backend",
        choices=["local", "ray"],
        help="where the pinned evals run (the config's `backend`): 'ray' runs them on the "
        "evaluator actor and its environment workers on the cluster at --ray.address",
    )
    p.add_argument(
        "--plan",
        action="store_true",
        help="print the power calculations (panel episodes per arm, sessions for the "
        "planted preference) and exit",
    )


def traces_url(config: Config) -> str:
    from shadowrl.serve.store import StoreError, resolve_url

    if config.serve.traces is None:
        raise UsageError("realtime needs the trace store: set serve.traces")
    try:
        return resolve_url(config.serve.traces, config.run_dir)
    except StoreError as e:
        raise UsageError(str(e)) from e


def workspaces_root(config: Config) -> Path:
    """Where agent sessions' workspaces live: `serve.workspaces_root`, else one in the run."""
    root = config.serve.workspaces_root
    run_dir = Path(config.run_dir).resolve()
    return Path(root).expanduser().resolve() if root else run_dir / "realtime" / "workspaces"


def server_argv(
    config_file: Path, traces: str, run_dir: Path, token_file: Path, workspaces: Path
) -> Callable[[str, int, int], list[str]]:
    """The `shadowrl serve` command line of the loop's server, on the same config, with
    the agent service on (`workspaces`); the admin token travels by file, never in argv."""

    def argv(checkpoint: str, version: int, port: int) -> list[str]:
        return [
            sys.executable, "-m", "shadowrl.commands.main", "serve", "--config", str(config_file),
            f"--model.path={checkpoint}", f"--run_dir={run_dir}", f"--serve.traces={traces}",
            "--serve.host=127.0.0.1", f"--serve.port={port}", f"--serve.policy_version={version}",
            f"--serve.admin_token_file={token_file}", "--serve.log_level=warning",
            f"--serve.workspaces_root={workspaces}",
        ]  # fmt: skip

    return argv


def initial_checkpoint(config: Config) -> Callable[[Path], str]:
    """Writes `model.path` as an HF directory the server can hot-swap back to."""

    def write(dest: Path) -> str:
        from shadowrl.atomic import build_dir
        from shadowrl.models import load_model

        if Path(config.model.path).is_dir():
            return str(Path(config.model.path).resolve())

        def save(tmp: Path) -> None:
            model, tok = load_model(config.model, seed=config.seed)  # float32: lossless
            model.save_pretrained(tmp, safe_serialization=True)
            tok.save_pretrained(tmp)

        build_dir(dest, save, complete=lambda d: (d / "config.json").exists())
        return str(dest.resolve())

    return write


def mix_candidates(config: Config) -> list[Task]:
    """The train tasks `realtime.mix` may roll out on: the pinned suite's train split, less
    the pinned tasks; none is a UsageError when mixing is asked for."""
    from shadowrl.commands.eval import load_eval_tasks, parse_suite
    from shadowrl.realtime import mix_tasks
    from shadowrl.tasks import load_suite

    rt = config.realtime
    if rt.mix == 0:
        return []
    name, _ = parse_suite(rt.suite)
    found = mix_tasks(load_suite(name, "train"), load_eval_tasks(rt.suite, rt.eval_limit))
    if not found:
        raise UsageError(f"realtime.mix: suite {name!r} has no train task outside the pinned ones")
    return found


def user_pool(config: Config) -> list[Task]:
    """The tasks users bring: `realtime.users.suite`, narrowed by its screen if there is one."""
    from shadowrl.commands.eval import load_eval_tasks
    from shadowrl.eval import EvalResult
    from shadowrl.experiments import Preference, learnable

    users = config.realtime.users
    tasks = load_eval_tasks(users.suite, users.limit)
    if users.screen is None:
        return tasks
    path = Path(users.screen)
    if not path.exists():
        raise UsageError(f"realtime.users.screen: no such file {path} (run `shadowrl eval` first)")
    judged = Preference.of(users) if users.screen_by == "user" else Preference()
    kept = learnable(tasks, EvalResult.load(path), judged)
    if not kept:
        raise UsageError(
            f"the screen {path} found no task of {users.suite} that "
            f"{'the users accept' if users.screen_by == 'user' else 'passes its tests'} "
            "sometimes but not always: screen more samples or tasks, or drop "
            "realtime.users.screen"
        )
    logging.getLogger(__name__).info("users bring %d of %d screened tasks", len(kept), len(tasks))
    return kept


def deps_of(config: Config, simulate: bool) -> Deps:
    from shadowrl.commands.eval import load_eval_tasks
    from shadowrl.commands.keys import private_keys
    from shadowrl.commands.policies import open_evaluator, open_policy
    from shadowrl.eval import config_pins
    from shadowrl.experiments import (
        Preference,
        SimulatedUsers,
        build_measurement,
        panel_tasks,
        planted_judge,
    )
    from shadowrl.models import load_tokenizer
    from shadowrl.realtime import Deps
    from shadowrl.rl import build_step_checks

    rt = config.realtime
    run_dir = Path(config.run_dir).resolve()
    spec, cache_dir, workspaces = (
        episode_spec(config), Path(config.tasks.cache_dir).expanduser(), workspaces_root(config)
    )  # fmt: skip
    pool = user_pool(config) if simulate or rt.panel is not None else []
    users = None
    if simulate:
        judge = planted_judge(Preference.of(rt.users))
        users = SimulatedUsers(
            pool, workspaces, spec, rt.users, cache_dir, run_dir / "realtime", judge
        )
    panel = panel_tasks(pool, rt.panel.tasks) if rt.panel is not None else []
    brancher = branching(config, pool if simulate else None)
    return Deps(
        run_dir=run_dir,
        rt=rt,
        eval=config.eval,
        train=config.train,
        model=config.model,
        spec=spec,
        pins=config_pins(config),
        tokenizer=load_tokenizer(config.model.path),
        open_evaluator=lambda spec: open_evaluator(spec, config),
        open_policy=lambda spec: open_policy(spec, config),
        pinned=load_eval_tasks(rt.suite, rt.eval_limit),
        mix_tasks=mix_candidates(config),
        cache_dir=cache_dir,
        workspaces=workspaces,
        seed=config.seed,
        users=users,
        measurement=build_measurement(rt, panel),
        brancher=brancher,
        checks=build_step_checks(config.train, rt),
        private_keys=private_keys(config),
    )


def branching(config: Config, pool: list[Task] | None) -> Brancher | None:
    """The branching stage `realtime.branching` asks for; `pool`: the simulated users'
    tasks (None: real users), whose user judges with 'preference' or 'reaction'."""
    from shadowrl.commands.branch_user import JUDGED, user_model
    from shadowrl.realtime import build_brancher
    from shadowrl.tasks.prepare import prepare

    rt, spec = config.realtime, episode_spec(config)
    cache_dir = Path(config.tasks.cache_dir).expanduser()
    by_id = {t.instance_id: t for t in pool or ()}

    def prepared(task_id: str) -> PreparedTask | None:
        task = by_id.get(task_id)
        return None if task is None else prepare(task, cache_dir)

    log = Path(config.run_dir).resolve() / "realtime" / JUDGED
    user = (
        None if pool is None else user_model(rt.users, rt.rewards, spec, prepared, config.seed, log)
    )
    try:
        return build_brancher(rt.branching, cache_dir, spec.sandbox, spec.shaping, user)
    except ValueError as e:
        raise UsageError(str(e)) from e


def open_trace_store(url: str) -> TraceStore:
    from sqlalchemy.exc import SQLAlchemyError

    from shadowrl.serve.store import StoreError, TraceStore
    from shadowrl.serve.store.db import open_engine

    try:
        return TraceStore(open_engine(url))
    except (StoreError, OSError, SQLAlchemyError) as e:
        raise UsageError(f"cannot open the trace store {url!r}: {e}") from e


def _one_temperature(config: Config) -> None:
    """Mixed rollouts and branch continuations sample at `agent.temperature`; a cycle
    trains every row at the temperature its sessions were served at."""
    rt, agent = config.realtime, config.agent.temperature
    if (rt.mix > 0 or rt.branching.enabled) and agent != rt.rows.temperature:
        raise UsageError(
            f"realtime.mix and realtime.branching sample at agent.temperature={agent}, the "
            f"cycle trains at realtime.rows.temperature={rt.rows.temperature}: set both alike"
        )


def _one_process_trainer(config: Config) -> None:
    """A cycle's arm scores the parent and the candidate (divergence, the heads' acceptance)
    with forwards on rank 0 alone, which a sharded model cannot run: ranks 1..N-1 would
    wait for a collective that never comes."""
    if config.train.parallel != "replicate":
        raise UsageError(
            f"realtime trains each candidate on whole replicas; train.parallel="
            f"{config.train.parallel!r} shards the model: set train.parallel: replicate"
        )


def run(args: argparse.Namespace, config: Config) -> int:
    import asyncio

    from shadowrl.experiments import LearningMeasurement, write_plans
    from shadowrl.realtime import read_admin_token, run_admin_token, run_cycles

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request drowns progress

    if args.backend:
        config = config.model_copy(update={"backend": args.backend})
    if args.cycles is not None:
        config = config.model_copy(
            update={"realtime": config.realtime.model_copy(update={"cycles": args.cycles})}
        )
    _one_temperature(config)
    _one_process_trainer(config)
    run_dir = Path(config.run_dir).resolve()
    root = run_dir / "realtime"
    root.mkdir(parents=True, exist_ok=True)
    config_file = root / "config.yaml"  # the server runs on exactly this config
    dumped = config.model_dump(mode="json")
    dumped["realtime"]["admin_token"] = ""  # the secret stays in its 0600 file
    config_file.write_text(yaml.safe_dump(dumped, sort_keys=False))
    url = traces_url(config)
    token_file = run_admin_token(root, config.realtime.admin_token)
    rt = config.realtime.model_copy(update={"admin_token": read_admin_token(token_file)})
    config = config.model_copy(update={"realtime": rt})
    deps = deps_of(config, args.simulate_users)
    argv = server_argv(config_file, url, run_dir, token_file, deps.workspaces)
    m = deps.measurement
    panel = m.panel_tasks if isinstance(m, LearningMeasurement) else []
    if not write_plans(config.realtime, config.eval.alpha, root, panel) and args.plan:
        raise UsageError(
            "--plan sizes the panel and the planted preference: set realtime.panel or a "
            "realtime.users.max_* limit"
        )
    if args.plan:
        return 0
    with open_trace_store(url) as store:
        rows = asyncio.run(run_cycles(deps, store, argv, initial_checkpoint(config)))
    for r in rows:
        print(
            f"cycle {r.cycle}: {r.sessions} sessions, accept rate {r.accept_rate}, "
            f"{r.gate or 'no candidate'} ({r.reason}), {r.cycle_s:.0f} s"
        )
    print(f"wrote {root / 'cycles.jsonl'} and {root / 'report.md'}")
    return 0
