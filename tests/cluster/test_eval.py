"""`shadowrl eval --backend ray`: the same eval.json outcomes as in one process.

Both runs are the real `shadowrl eval` command (in the test's process, which the
fixture already joined to the cluster) on the same tasks with the scripted
`gold` policy (deterministic: the other side of the policy interface); the Ray one
runs its samples through the evaluator actor on the worker node and an elastic pool of
environment workers. Outcomes, grading and pins must agree sample by sample; only the
config digest differs (it records the backend).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from shadowrl.commands.main import main

CACHE = os.environ.get("SHADOWRL_TEST_CACHE", "/tmp/shadowrl-test-cache")
TOOLS = "[read_file, edit_file, write_file, list_dir, grep, lint, run, submit]"


def _eval(out: Path, *extra: str) -> None:
    argv = [
        "eval", "--policy", "gold", "--suite", "easy:train", "--limit", "2", "--samples", "2",
        "--no-progress", "--model.path=tiny", f"--tasks.cache_dir={CACHE}",
        f"--agent.tools={TOOLS}", "--out", str(out), *extra,
    ]  # fmt: skip
    assert main(argv) == 0


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


def test_ray_eval_gives_the_local_outcomes(ray_cluster, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="shadowrl.pipeline.evaluator")
    _eval(tmp_path / "local")
    _eval(
        tmp_path / "ray", "--backend", "ray", f"--ray.address={ray_cluster.address}",
        "--ray.env_cpus=0.1", "--ray.evaluator_cpus=0.1", "--ray.env_resources={rollout: 1}",
        "--ray.evaluator_resources={rollout: 1}", "--ray.elastic.mode=elastic",
        "--ray.elastic.max_workers=2", "--ray.elastic.slots=2",
    )  # fmt: skip
    assert "ray evaluator on 127.0.0.3" in caplog.text  # the evaluator ran on the worker node
    local, remote = _outcomes(tmp_path / "local"), _outcomes(tmp_path / "ray")
    assert len(local) == 4 and remote == local
    assert any(o["resolved"] for o in local.values())  # gold solves: the outcomes say something
    pins = [json.loads((tmp_path / d / "eval.json").read_text())["pins"] for d in ("local", "ray")]
    for key in ("suite_hash", "harness_version", "policy"):
        assert pins[0][key] == pins[1][key]
    assert pins[0]["config_digest"] != pins[1]["config_digest"]  # `backend: ray` is pinned
