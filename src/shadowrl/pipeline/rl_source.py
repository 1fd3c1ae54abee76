"""RL on a stream of fresh instances instead of the prepared train list.

`pipeline.rl_stream` swaps epochs over a fixed list for the family's one-pass stream
(`tasks/family/stream.py`): every draw a new instance of the family's train part,
whatever the configured suites, never the same bug twice, logged to
run_dir/rl_stream.jsonl (what training saw, and what a resumed run reads back so
nothing it drew comes again). `pipeline.rl_templates` narrows it to some train templates,
`pipeline.rl_operators` to some kinds of bug. It never draws a bug of the run's train
tasks (SFT's demos among them), so RL is not rewarded for recalling a fitted patch.
"""

from __future__ import annotations

from pathlib import Path

from shadowrl.pipeline.config import TrainRun
from shadowrl.pipeline.tasksets import train_tasks
from shadowrl.rl import TaskSource
from shadowrl.tasks import build_env, env_python
from shadowrl.tasks.family.catalog import pick
from shadowrl.tasks.family.stream import FamilyStream

STREAM_LOG = "rl_stream.jsonl"


def family_stream(run: TrainRun) -> TaskSource:
    """The train part's stream for this run, seeded by `run.seed`, resumed from its log."""
    python = env_python(build_env(("pytest",), Path(run.tasks.cache_dir).expanduser()))
    pool = pick("train", run.pipeline.rl_templates)
    log = run.run_dir / STREAM_LOG
    fitted = [t for t in train_tasks(run) if t.tier == "family"]
    return FamilyStream(
        python, run.tasks.cache_dir, log, seed=run.seed, pool=pool,
        operators=run.pipeline.rl_operators, skip=fitted,
    )  # fmt: skip
