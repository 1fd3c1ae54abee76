"""`shadowrl train --backend ray` end to end, and a driver killed mid-run that resumes.

The driver is a real `shadowrl train` process on the test cluster (tiny random model,
real tasks, sandboxes, engines and actors). SIGKILL ends it and, with it, the actors
of its Ray job; rerunning the command resumes from the last checkpoint and
weight-store version, losing at most the step in progress.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shadowrl.metrics import read_metrics
from shadowrl.rl.weights import WeightStore

ROOT = Path(__file__).resolve().parents[2]


def _argv(cluster, run: Path, steps: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "shadowrl.commands.main",
        "train",
        f"--config={ROOT / 'configs' / 'tiny.yaml'}",
        "--backend",
        "ray",
        f"--ray.address={cluster.address}",
        f"--run_dir={run}",
        f"--train.steps={steps}",
        "--pipeline.sft=false",
    ]


def _env() -> dict[str, str]:
    src = str(ROOT / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}


@pytest.mark.slow
def test_killed_driver_resumes_from_last_checkpoint(ray_cluster, tmp_path):
    run = tmp_path / "run"
    log = open(tmp_path / "first.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(_argv(ray_cluster, run, 3), env=_env(), stdout=log, stderr=log)
    state = run / "loop_state.json"
    try:
        deadline = time.monotonic() + 600
        while not state.exists():  # behaviour, not timing: wait for the first checkpoint
            assert proc.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint written"
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()
    done = json.loads(state.read_text())["step"]
    assert 1 <= done < 3

    second = subprocess.run(
        _argv(ray_cluster, run, 3), env=_env(), capture_output=True, text=True, timeout=900
    )
    assert second.returncode == 0, second.stderr[-3000:]
    records = read_metrics(run / "metrics.jsonl", "rl")
    steps = [r["step"] for r in records]
    assert all(r["env_workers"] == 2 for r in records)  # the worker pool's counts, per step
    assert steps[:done] == list(range(1, done + 1))  # nothing before the checkpoint is redone
    assert sorted(set(steps)) == [1, 2, 3] and len(steps) <= 4
    final = json.loads(state.read_text())
    assert final["step"] == 3
    trainer = json.loads(
        (run / "checkpoints" / final["checkpoint"] / "trainer_state.json").read_text()
    )
    assert WeightStore(str(run / "weights")).latest_version() == trainer["version"]
    assert (run / "eval_rl_step3" / "eval.json").exists()
