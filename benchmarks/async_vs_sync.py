"""Async vs sync RL: how much wall clock does overlapping rollouts with training save?

Agent episodes spend most of their time waiting on tools (tests, builds, installs),
and that wait is heavy-tailed: most commands are quick, a few take many times longer.
A synchronous RL loop waits for the slowest episode of every step and then lets the
sandboxes idle while the optimizer runs. The asynchronous loop keeps groups in flight
across steps, so stragglers and optimizer steps overlap with other groups' work.

Both modes run the real `Orchestrator` with the same settings, seeds and number of
trained samples, one after the other in one process:

* rollouts — the real harness: `run_episode` in real sandboxes (`create_sandbox`, one
  prepared root per group, G O(1) forks), whose turns call the `run` tool with a real
  `sleep <d>`; d ~ log-normal(median, sigma), drawn from (seed, launch ordinal of the
  group, member, turn), so the k-th launched group waits exactly as long in both modes.
  The last `run` also writes an answer file; the reward is read back from the sandbox
  (members alternate right/wrong answers, so no group is zero-advantage and every step
  really trains). The policy is scripted (a 2-layer random model cannot write tool
  calls) but stamps each token with the engine's current weights version, so staleness
  is measured and filtered exactly as in a real run.
* trainer — the real `Trainer` (AdamW, RL objective) on the tiny model, training on the
  trajectories' real token sequences; weight sync — the real `WeightStore` (XOR delta,
  zstd) and `Engine.update_weights` on a serving copy of the model.

Sync launches `groups_per_step` groups, waits, trains, syncs. Async keeps
`inflight_groups` groups running (so its rollout concurrency is higher: that is the
point of async RL, and the price is staleness — groups more than `max_staleness`
versions old are dropped and counted, never trained). Both train exactly
`steps × groups_per_step × group_size` episodes. `wall_s` is the time until the last
optimizer step and its weight sync are done, i.e. the time to train that many samples;
`teardown_s`, reported apart, is the wait for the async mode's surplus in-flight groups
after being cancelled (a sandbox cannot be closed while a command runs in it, so a
cancelled episode waits out its current tool call; in a long run that happens once). The table shows the tool latency of the
episodes each mode trained on next to that of all launched ones, so any selection of
fast groups by the async mode is visible.

    .venv/bin/python benchmarks/async_vs_sync.py [--quick] [--steps 6] [--median-s 1.0] [--inflight-groups 4]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import statistics
import tempfile
import time
import traceback
from collections.abc import Awaitable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from _machine import machine
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.types import Generation, SamplingParams, Trajectory

RESULTS = Path(__file__).parent / "results" / "async_vs_sync.json"
Mode = Literal["sync", "async"]
SYSTEM_PROMPT = "Use the tools, then submit."  # short: every prompt token is trained on


class Settings(BaseModel):
    """Everything both modes share; written into the results JSON."""

    steps: int = Field(6, ge=1, description="Optimizer steps per mode.")
    group_size: int = Field(4, ge=2, description="Episodes per group (G).")
    groups_per_step: int = Field(1, ge=1, description="Groups trained per optimizer step.")
    inflight_groups: int = Field(4, ge=1, description="Groups kept running in async mode.")
    max_staleness: int = Field(4, ge=0, description="Versions a trained token may lag.")
    turns: int = Field(3, ge=1, description="`run` calls per episode before it submits.")
    median_s: float = Field(1.0, gt=0, description="Median of one tool call's sleep, seconds.")
    sigma: float = Field(1.0, ge=0, description="Log-normal sigma of the tool sleep.")
    seed: int = Field(0, description="Seed of tool latencies, task order and models.")
    backend: str = Field("auto", description="Sandbox backend ('auto', 'overlay', 'local').")
    lr: float = Field(1e-5, gt=0, description="Trainer AdamW learning rate.")
    microbatch_tokens: int = Field(2048, ge=1, description="Trainer microbatch token budget.")
    torch_threads: int = Field(
        1, ge=1, description="torch intra-op threads (on 2 shared cores a 2nd one only contends)."
    )


@dataclass(frozen=True)
class Problem:
    """A one-line arithmetic task; the answer is checked in the sandbox's answer.txt.

    `instance_id` is what the orchestrator reads of a task (`rl.orchestrator.TrainTask`).
    """

    instance_id: str
    a: int
    b: int

    @property
    def prompt(self) -> str:
        return f"Compute {self.a} + {self.b} and write the result to answer.txt, then submit."


def tool_sleeps(s: Settings, group: int, member: int) -> list[float]:
    """The seeded log-normal latency of each `run` call of one episode."""
    import numpy as np

    rng = np.random.default_rng([s.seed, group, member])
    return [float(x) for x in rng.lognormal(math.log(s.median_s), s.sigma, size=s.turns)]


def episode_replies(sleeps: Sequence[float], answer: int) -> list[str]:
    """Hermes tool-call replies: one `run` per sleep (the last writes the answer), then submit."""
    from shadowrl.agent.prompt import format_tool_calls
    from shadowrl.types import ToolCall

    cmds = [f"sleep {d:.3f}" for d in sleeps]
    cmds[-1] += f" && echo {answer} > answer.txt"
    calls = [ToolCall(f"c{i}", "run", {"command": c}) for i, c in enumerate(cmds)]
    calls.append(ToolCall("done", "submit", {}))
    return [format_tool_calls("", [c]) for c in calls]


class VersionedScript(ScriptedPolicy):
    """A scripted policy whose tokens carry the serving engine's current weights version."""

    def __init__(self, tokenizer: Any, replies: Sequence[str], engine: Any) -> None:
        super().__init__(tokenizer, replies)
        self.engine = engine

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        self.version = self.engine.version
        return await super().generate(prompt_ids, sampling)


class SleepyRollouts:
    """The orchestrator's injected rollout function: G real episodes in forked sandboxes."""

    def __init__(self, s: Settings, tokenizer: Any, engine: Any, workspace: Path) -> None:
        from shadowrl.agent.config import AgentConfig

        self.s, self.tokenizer, self.engine, self.workspace = s, tokenizer, engine, workspace
        self.agent = AgentConfig.model_validate(
            {"tools": ("run", "submit"), "max_turns": s.turns + 2, "system_prompt": SYSTEM_PROMPT}
        )
        self.launched = 0  # launch ordinal: the key of a group's latencies

    def __call__(self, task: Problem, prepared: Any, version: int) -> Awaitable[Any]:
        k, self.launched = self.launched, self.launched + 1
        return self.group(k, task, version)

    async def group(self, k: int, task: Problem, version: int) -> Any:
        from shadowrl.rl.rollout import Group
        from shadowrl.sandbox import create_sandbox

        start = time.perf_counter()
        root = await asyncio.to_thread(create_sandbox, self.workspace, self.s.backend)
        try:
            snap = await asyncio.to_thread(root.snapshot)
            results = await asyncio.gather(
                *(self.episode(snap, k, j, task) for j in range(self.s.group_size)),
                return_exceptions=True,
            )
        finally:
            await asyncio.to_thread(root.close)
        trajs = [r for r in results if isinstance(r, Trajectory)]
        errors = [
            "".join(traceback.format_exception(r)) for r in results if isinstance(r, Exception)
        ]
        return Group(f"g{k}", trajs, errors, version, time.perf_counter() - start)

    async def episode(self, snap: Any, k: int, j: int, task: Problem) -> Trajectory:
        from shadowrl.agent.loop import run_episode

        answer = task.a + task.b + j % 2  # odd members answer wrong
        policy = VersionedScript(
            self.tokenizer, episode_replies(tool_sleeps(self.s, k, j), answer), self.engine
        )
        sandbox = await asyncio.to_thread(snap.fork)
        try:
            traj = await run_episode(
                policy, sandbox, task.prompt, tokenizer=self.tokenizer, config=self.agent,
                task_id=f"g{k}",
            )  # fmt: skip
            written = await asyncio.to_thread(sandbox.exec, "cat answer.txt")
        finally:
            await asyncio.to_thread(sandbox.close)
        reward = float(written.stdout.strip() == str(task.a + task.b))
        return dataclasses.replace(traj, reward=reward, info={**traj.info, "resolved": reward > 0})


class RecordingTrainer:
    """The real Trainer, plus a log of which groups each step trained on and how long it took."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.version: int = trainer.version
        self.trained: list[str] = []
        self.train_s: list[float] = []

    def train_groups(self, groups: Sequence[Sequence[Trajectory]]) -> dict[str, float]:
        t0 = time.perf_counter()
        metrics: dict[str, float] = self.trainer.train_groups(groups)
        self.train_s.append(time.perf_counter() - t0)
        self.trained += [g[0].task_id for g in groups]
        self.version = self.trainer.version
        return metrics

    def state_dict(self) -> Any:
        return self.trainer.state_dict()


def problems(n: int, seed: int) -> list[tuple[Problem, None]]:
    import random

    rng = random.Random(seed)
    return [(Problem(f"p{i}", rng.randint(10, 99), rng.randint(10, 99)), None) for i in range(n)]


async def run_mode(mode: Mode, s: Settings, tokenizer: Any, workspace: Path) -> dict[str, Any]:
    """One full RL run of `s.steps` steps with the real Orchestrator; returns its numbers."""
    from shadowrl.inference.engine import Engine
    from shadowrl.models import tiny_model
    from shadowrl.rl.config import TrainConfig
    from shadowrl.rl.orchestrator import Orchestrator, OrchestratorConfig, TaskSampler
    from shadowrl.rl.trainer import Trainer
    from shadowrl.rl.weights import WeightStore

    workers = s.inflight_groups * (s.group_size + 1) + 4  # every blocking tool call holds one
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(workers))
    tcfg = TrainConfig.model_validate(
        {"steps": s.steps, "group_size": s.group_size, "groups_per_step": s.groups_per_step,
         "batch": {"max_staleness": s.max_staleness, "microbatch_tokens": s.microbatch_tokens},
         "optimizer": {"lr": s.lr}}
    )  # fmt: skip
    trainer = RecordingTrainer(Trainer(tiny_model(s.seed)[0], tcfg, seed=s.seed))
    engine = Engine(tiny_model(s.seed)[0])
    rollouts = SleepyRollouts(s, tokenizer, engine, workspace)
    cfg = OrchestratorConfig.model_validate({"mode": mode, "inflight_groups": s.inflight_groups})
    t0 = time.perf_counter()
    done_at = [0.0]  # when the last optimizer step (and its weight sync) finished

    def progress(step: int, m: dict[str, Any]) -> None:
        done_at[0] = time.perf_counter() - t0
        print(f"  [{mode}] step {step + 1}/{s.steps}  {time.perf_counter() - t0:6.1f}s  "
              f"reward {m['reward']:.2f}  staleness {m['staleness_mean']:.1f}  "
              f"loss {m['loss']:+.2e}", flush=True)  # fmt: skip

    with tempfile.TemporaryDirectory() as store_dir:
        orch = Orchestrator(
            cfg=cfg, train=tcfg, rollout=rollouts, engine=engine, trainer=trainer,
            store=WeightStore(store_dir), tasks=TaskSampler(problems(16, s.seed), s.seed),
            on_step=progress,
        )  # fmt: skip
        stats = await orch.run()
    teardown = time.perf_counter() - t0 - done_at[0]
    return summarize(mode, s, done_at[0], teardown, stats, trainer, rollouts.launched)


def summarize(
    mode: str,
    s: Settings,
    wall: float,
    teardown: float,
    stats: Any,
    trainer: RecordingTrainer,
    launched: int,
) -> dict[str, Any]:
    def mean_sleep(groups: Sequence[int]) -> float:
        sums = [sum(tool_sleeps(s, k, j)) for k in groups for j in range(s.group_size)]
        return statistics.fmean(sums)

    trained = [int(g[1:]) for g in trainer.trained]
    return {
        "mode": mode,
        "wall_s": wall,
        "teardown_s": teardown,
        "steps": s.steps,
        "trained_episodes": len(trained) * s.group_size,
        "groups_launched": launched,
        "groups_stale_dropped": stats.groups_stale,
        "groups_failed": stats.groups_failed,
        "staleness_mean": statistics.fmean(stats.staleness) if stats.staleness else 0.0,
        "staleness_max": max(stats.staleness, default=0),
        "train_s_mean": statistics.fmean(trainer.train_s),
        "tool_s_per_trained_episode": mean_sleep(trained),
        "tool_s_per_launched_episode": mean_sleep(range(launched)),
    }


COLUMNS = [
    ("mode", "{}"),
    ("wall_s", "{:.1f}"),
    ("teardown_s", "{:.1f}"),
    ("trained_episodes", "{}"),
    ("groups_launched", "{}"),
    ("groups_stale_dropped", "{}"),
    ("staleness_mean", "{:.2f}"),
    ("train_s_mean", "{:.2f}"),
    ("tool_s_per_trained_episode", "{:.2f}"),
    ("tool_s_per_launched_episode", "{:.2f}"),
]


def table(rows: Sequence[dict[str, Any]]) -> str:
    cells = [[name for name, _ in COLUMNS]] + [[f.format(r[n]) for n, f in COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells
    )


async def warm_up(s: Settings, tokenizer: Any, workspace: Path) -> None:
    """One zero-latency group outside the clock: chat template, sandbox and tokenizer paths."""
    from shadowrl.inference.engine import Engine
    from shadowrl.models import tiny_model

    quick = s.model_copy(update={"median_s": 1e-3, "sigma": 0.0})
    rollouts = SleepyRollouts(quick, tokenizer, Engine(tiny_model(s.seed)[0]), workspace)
    group = await rollouts(problems(1, s.seed)[0][0], None, 0)
    if not group.ok:
        raise RuntimeError("warm-up group failed:\n" + "\n".join(group.errors))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="3 steps instead of 6 (about half the time)."
    )
    for name, field in Settings.model_fields.items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=type(field.default), default=None,
                        help=field.description)  # fmt: skip
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    given = {k: v for k in Settings.model_fields if (v := getattr(args, k)) is not None}
    s = Settings(**({"steps": 3} if args.quick else {}) | given)

    import torch

    torch.set_num_threads(s.torch_threads)

    from shadowrl.models import load_tokenizer

    tokenizer = load_tokenizer("tiny")
    with tempfile.TemporaryDirectory() as ws:
        workspace = Path(ws)
        (workspace / "README.md").write_text("Arithmetic answers go in answer.txt.\n")
        print("warming up (one zero-latency group)", flush=True)
        asyncio.run(warm_up(s, tokenizer, workspace))
        rows = []
        modes: tuple[Mode, ...] = ("sync", "async")
        for mode in modes:
            print(f"{mode}: {s.steps} steps", flush=True)
            rows.append(asyncio.run(run_mode(mode, s, tokenizer, workspace)))
    speedup = rows[0]["wall_s"] / rows[1]["wall_s"]
    print(table(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {"settings": s.model_dump(), "machine": machine(), "runs": rows, "speedup": speedup}
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    print(f"speedup={speedup:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
