"""`shadowrl eval --backend ray`: the same eval.json outcomes as in one process.

Both runs are real `shadowrl eval` processes on the same tasks with the scripted
`gold` policy (deterministic: the other side of the policy interface); the Ray one
runs its samples through the evaluator actor on the worker node and an elastic pool of
environment workers. Outcomes, grading and pins must agree sample by sample; only the
config digest differs (it records the backend).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .test_driver import _env

CACHE = os.environ.get("SHADOWRL_TEST_CACHE", "/tmp/shadowrl-test-cache")
TOOLS = "[read_file, edit_file, write_file, list_dir, grep, lint, run, submit]"


def _eval(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable, "-m", "shadowrl.commands.main", "eval", "--policy", "gold",
        "--suite", "easy:train", "--limit", "2", "--samples", "2", "--no-progress",
        "--model.path=tiny", f"--tasks.cache_dir={CACHE}", f"--agent.tools={TOOLS}",
        "--out", str(out), *extra,
    ]  # fmt: skip
    done = subprocess.run(argv, env=_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def _outcomes(out: Path) -> dict[tuple[str, int], dict]:
    r = json.loads((out / "eval.json").read_text())
    keep = ("resolved", "reward", "end", "turns", "tool_calls", "tool_errors", "diff_lines")
    return {
        (t["instance_id"], s["sample"]): {
            **{k: s[k] for k in keep},
            "grading": {k: s["grading"][k] for k in ("status", "fail_to_pass", "pass_to_pass")},
        }
        for t in r["tasks"]
        for s in t["samples"]
    }


def test_ray_eval_gives_the_local_outcomes(ray_cluster, tmp_path):
    _eval(tmp_path / "local")
    ray = _eval(
        tmp_path / "ray", "--backend", "ray", f"--ray.address={ray_cluster.address}",
        "--ray.env_cpus=0.1", "--ray.evaluator_cpus=0.1", "--ray.env_resources={rollout: 1}",
        "--ray.evaluator_resources={rollout: 1}", "--ray.elastic.mode=elastic",
        "--ray.elastic.max_workers=2", "--ray.elastic.slots=2",
    )  # fmt: skip
    assert "ray evaluator on 127.0.0.3" in ray.stderr  # the evaluator ran on the worker node
    local, remote = _outcomes(tmp_path / "local"), _outcomes(tmp_path / "ray")
    assert len(local) == 4 and remote == local
    assert any(o["resolved"] for o in local.values())  # gold solves: the outcomes say something
    pins = [json.loads((tmp_path / d / "eval.json").read_text())["pins"] for d in ("local", "ray")]
    for key in ("suite_hash", "harness_version", "policy"):
        assert pins[0][key] == pins[1][key]
    assert pins[0]["config_digest"] != pins[1]["config_digest"]  # `backend: ray` is pinned


def test_eval_backend_ray_refuses_a_served_url(tmp_path):
    argv = [sys.executable, "-m", "shadowrl.commands.main", "eval", "--policy",
            "http://127.0.0.1:9/v1", "--suite", "easy:train", "--limit", "1", "--backend", "ray",
            "--out", str(tmp_path)]  # fmt: skip
    done = subprocess.run(argv, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "evaluates local weights or a reference policy" in done.stderr
    assert "Traceback" not in done.stderr
