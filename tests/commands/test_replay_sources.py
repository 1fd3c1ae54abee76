"""`shadowrl replay` on training rollouts and eval episodes (tiny model, the demo task).

A rollout's tokens are teacher-forced through the policy version they were sampled
from, fetched from the weight store: the version the engine ran gives the recorded
logprobs within 1e-4, and once that version is gone from the store replay says so in
one line. `shadowrl eval --save-dir` writes episodes that replay continues and checks.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
import torch

from shadowrl.agent.config import AgentConfig
from shadowrl.commands.main import main
from shadowrl.episode import EpisodeSpec, SharedPolicy, episode_in_new_sandbox
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.models import ModelConfig, load_model
from shadowrl.replay import record
from shadowrl.replay.record import RolloutRecorder
from shadowrl.rl.rollout import Group
from shadowrl.rl.weights import WeightStore
from shadowrl.sandbox import SandboxConfig
from shadowrl.tasks import load_suite, prepare
from shadowrl.tasks.config import TasksConfig

LOCAL = "--sandbox.backend=local"


def gap(out: str) -> float:
    return float(out.split("max |Δ logprob| = ")[1].split()[0])


def test_rollout_replays_through_its_weight_store_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, tok = load_model(ModelConfig(path="tiny"))
    store = WeightStore(str(tmp_path / "weights"))
    store.publish(model.state_dict(), 0)
    with torch.no_grad():  # version 3: other weights, so only the right version matches
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    store.publish(model.state_dict(), 3)
    spec = EpisodeSpec(
        agent=AgentConfig(max_turns=3, max_new_tokens=16), sandbox=SandboxConfig(backend="local")
    )
    task = load_suite("demo")[0]
    prepared = prepare(task, TasksConfig().cache_dir)  # the shared cache replay reads too

    async def episode() -> Group:
        with Engine(model, tok, EngineConfig(), version=3, seed=0) as engine:
            policy = SharedPolicy(engine, tok, "tiny")(task, prepared)
            traj, _ = await episode_in_new_sandbox(policy, prepared, tokenizer=tok, spec=spec)
        return Group(task.instance_id, [traj])

    keep = RolloutRecorder(tmp_path / "rollouts", spec, "tiny", str(tmp_path / "weights"))
    (path,) = keep(task, asyncio.run(episode()), 3)
    rec = record.load(path)
    assert {v for s in rec.trajectory.segments for v in s.versions} == {-1, 3}
    capsys.readouterr()
    assert main(["replay", str(path), "--from-turn", "2", LOCAL]) == 0
    out = capsys.readouterr().out
    assert "tiny@v3" in out and "policy versions [3]" in out
    assert gap(out) < 1e-4 and "over 32 tokens" in out
    # the base weights (version 0) are not the policy that sampled it
    assert main(["replay", str(path), "--from-turn", "2", "--model", "tiny", LOCAL]) == 1
    assert gap(capsys.readouterr().out) > 1e-2
    shutil.rmtree(tmp_path / "weights" / "v00000003")
    assert main(["replay", str(path), "--from-turn", "2", LOCAL]) == 2
    err = capsys.readouterr().err
    assert "policy version 3 is no longer in the weight store" in err and "--model" in err


def test_eval_save_dir_episodes_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "episodes"
    budget = ["--agent.max_turns=3", "--agent.max_new_tokens=16", LOCAL]
    args = ["eval", "--suite", "demo", "--policy", "tiny", "--samples", "1", "--no-progress"]
    args += [f"--out={tmp_path / 'eval'}", f"--save-dir={saved}", *budget]
    assert main(args) == 0
    (path,) = saved.glob("*.json")
    assert record.load(path).meta["source"] == "eval"
    capsys.readouterr()
    assert main(["replay", str(path), "--from-turn", "3", LOCAL]) == 0
    out = capsys.readouterr().out
    assert "replay from turn 3" in out and gap(out) < 1e-4 and "over 16 tokens" in out
