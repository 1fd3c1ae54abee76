"""Replay stays behind its one seam: the core (the agent loop, an episode, the RL run and
its rollouts, serving) reaches replay only through `shadowrl.replay` (its `Recorder`
and `build`), never its internals, and outside the package only replay's own clients
(the `run`, `eval` and `replay` commands, the real-time rebuild of served sessions)
read `replay/record.py`. The seam's two choices: off, nothing is written; on, every
episode of a group comes back from its record as it went in."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import shadowrl
from shadowrl import replay
from shadowrl.agent.config import AgentConfig
from shadowrl.episode import EpisodeSpec
from shadowrl.replay import record
from shadowrl.rl.rollout import Group
from shadowrl.tasks import load_suite
from shadowrl.types import Segment, Trajectory

SRC = Path(shadowrl.__file__).parent
CORE = (
    "agent/loop.py", "agent/state.py", "agent/compaction.py", "episode.py",
    "rl/run.py", "rl/orchestrator.py", "rl/rollout.py", "rl/capabilities.py", "rl/tree.py",
    "rl/batch.py", "rl/trainer.py", "pipeline/stages.py",
    "serve/app.py", "serve/server.py", "serve/agent_sessions.py", "serve/agent_routes.py",
    "serve/recording.py", "serve/openai_api.py", "serve/completions.py",
)  # fmt: skip
CLIENTS = {
    "commands/run.py", "commands/eval.py", "commands/replay.py",
    "realtime/rebuild.py", "realtime/branch_view.py",
}  # fmt: skip


def replay_imports(path: Path) -> set[str]:
    """The modules of `shadowrl.replay` that `path` imports, deferred imports included
    (`from shadowrl.replay import record` names the submodule, `import build` the entry)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                is_module = (SRC.parent / (sub.replace(".", "/") + ".py")).exists()
                found.add(sub if is_module or sub == "shadowrl.replay" else node.module)
    return {m for m in found if m == "shadowrl.replay" or m.startswith("shadowrl.replay.")}


def test_the_core_reaches_replay_only_through_its_entry() -> None:
    through = {m: replay_imports(SRC / m) for m in CORE}
    inside = {
        m: sorted(i - {"shadowrl.replay"}) for m, i in through.items() if i - {"shadowrl.replay"}
    }
    assert inside == {}, f"core modules import replay's internals, not `shadowrl.replay`: {inside}"
    assert through["rl/run.py"] == {"shadowrl.replay"}  # the one core that records, by the seam


def test_only_replays_clients_read_its_record_module() -> None:
    readers = {
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "replay" not in p.relative_to(SRC).parts[:1] and replay_imports(p) - {"shadowrl.replay"}
    }
    assert readers == CLIENTS


def _group() -> Group:
    seg = Segment((1, 2, 3), (False, True, True), (0.0, -0.5, -0.25), (-1, 4, 4))
    return Group(
        "demo", [Trajectory("demo", (), (), (seg,), "submitted", reward=r) for r in (1, 0)]
    )


def test_off_keeps_nothing_and_on_records_every_episode(tmp_path: Path) -> None:
    spec, task, group = EpisodeSpec(agent=AgentConfig()), load_suite("demo")[0], _group()
    off = replay.build_recorder(False, tmp_path / "off", spec, "tiny", None)
    asyncio.run(off.keep(task, group, 4))
    assert isinstance(off, replay.NoRecorder) and not (tmp_path / "off").exists()
    on = replay.build_recorder(True, tmp_path / "on", spec, "tiny", None)
    asyncio.run(on.keep(task, group, 4))
    saved = sorted((tmp_path / "on" / record.ROLLOUTS_DIR).glob("v00004-*.json"))
    recs = [record.load(p) for p in saved]
    assert [r.trajectory for r in recs] == group.trajectories
    assert {r.meta["weights"] for r in recs} == {str(tmp_path / "on" / "weights")}
    assert {r.meta["source"] for r in recs} == {"rollout"}
