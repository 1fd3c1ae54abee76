"""`shadowrl realtime --backend ray`: the cycle's pinned evals on the Ray evaluator.

One cycle of `configs/realtime-tiny.yaml` (tiny random model, simulated users, a real
server process) whose eval stage evaluates the incumbent and the candidate on the
evaluator actor, placed on the worker node, with engine actors serving each
checkpoint's weights; the gate then decides on those eval.json files as usual.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .test_driver import ROOT, _env

CONFIG = ROOT / "configs" / "realtime-tiny.yaml"


@pytest.mark.slow
def test_realtime_pinned_evals_run_on_the_ray_evaluator(ray_cluster, tmp_path: Path) -> None:
    run = tmp_path / "run"
    argv = [
        sys.executable, "-m", "shadowrl.commands.main", "realtime", "--config", str(CONFIG),
        f"--run_dir={run}", "--simulate-users", "--cycles", "1", "--realtime.watch_sessions=0",
        "--backend", "ray", f"--ray.address={ray_cluster.address}", "--ray.engine_cpus=0.25",
        "--ray.env_cpus=0.1", "--ray.evaluator_cpus=0.1", "--ray.engine_resources={rollout: 1}",
        "--ray.env_resources={rollout: 1}", "--ray.evaluator_resources={rollout: 1}",
        "--ray.torch_threads=1",
    ]  # fmt: skip
    done = subprocess.run(argv, env=_env(), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    # the incumbent (v0) and the candidate, each on an evaluator on the worker node
    assert done.stderr.count("ray evaluator on 127.0.0.3") == 2
    (row,) = [
        json.loads(line) for line in (run / "realtime" / "cycles.jsonl").read_text().splitlines()
    ]
    assert row["gate"] in ("promote", "reject")
    for eval_json in (
        run / "realtime" / "evals" / "v0000",
        run / "realtime" / "cycle-001" / "eval",
    ):
        r = json.loads((eval_json / "eval.json").read_text())
        assert r["samples"] == 2 and all(len(t["samples"]) == 2 for t in r["tasks"])
        assert all(s["end"] != "crash" for t in r["tasks"] for s in t["samples"])
