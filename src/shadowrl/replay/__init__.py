"""Replay: episodes kept as records, and a record continued from any of its turns.

What is recorded, and where:

    shadowrl run --save t.json     one episode, with the files it had changed after each turn
    shadowrl eval --save-dir D     every graded episode, as D/<task>-s<sample>.json
    train.save_rollouts            every episode of every group trained on, as
                                   run_dir/rollouts/v<version>-<task>-<group>-<leaf>.json,
                                   with the weight store that holds each token's version
    serve.traces                   not a file: the trace store's token-exact requests and
                                   steps of a served session (`serve/`), read back as one

A record is the trajectory token for token (segments with logprobs and policy versions,
messages, steps) and a meta saying what reopens it: the task, the agent config, the
model or weight store (`record.py`).

What replaying does (`shadowrl replay <file | trace id> --from-turn K`,
`commands/replay.py`): it rebuilds the episode right before turn K (the token state cut
from the recorded segments, nothing re-rendered; the workspace from the recorded files
or the recorded edits re-run on the task's fresh one: `record.checkpoint_at`), continues
it with the policy that generated it (`commands/replay_policy.py`) answering tool calls
with the recorded outputs (`record.RecordedOutputs`), says whether it regenerated the
recorded tail, and teacher-forces that tail through each token's policy version against
the recorded logprobs. A served agent session becomes a record in `realtime/rebuild.py`,
beside the checked rebuild the real-time branching shares.

Of the core (the agent loop, an episode, the RL run, serving), only the RL run writes
records, and it reaches replay only through this module: a `Recorder` built once by
`build_recorder` from `train.save_rollouts`, handed every group it will train on. Off, it is
`NoRecorder`, and `record.py` is never imported (`tests/replay/test_seam.py`,
`tests/rl/test_seams.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from shadowrl.episode import EpisodeSpec
    from shadowrl.replay.record import Scored
    from shadowrl.tasks import Task


class Recorder(Protocol):
    """Keeps the episodes of each scored group an RL run trains on."""

    async def keep(self, task: Task, group: Scored, version: int) -> None:
        """Record `group`'s episodes, sampled from policy `version` (writes off the event loop)."""
        ...


class NoRecorder:
    """`train.save_rollouts` off: nothing is kept, and awaiting it never suspends."""

    async def keep(self, task: Task, group: Scored, version: int) -> None:
        return None


def build_recorder(
    save_rollouts: bool, run_dir: Path, spec: EpisodeSpec, model_path: str, weights_url: str | None
) -> Recorder:
    """The recorder of an RL run in `run_dir`: with `save_rollouts`, one writing records
    under `run_dir/rollouts` that name the base model and the weight store (`weights_url`,
    else the run's own); else `NoRecorder`."""
    if not save_rollouts:
        return NoRecorder()
    from shadowrl.replay.record import ROLLOUTS_DIR, RolloutRecorder

    url = weights_url or str(run_dir / "weights")
    return RolloutRecorder(run_dir / ROLLOUTS_DIR, spec, model_path, url)
