"""The session's own continuation of a branch point, re-run and re-judged into its group.

What the served policy did from the branch turn is one more sample of the same choice
its K fresh siblings make, so it belongs in their group, but only scored the way they
are: by the same judge's scorer, never with its user-feedback reward (a different
scale and a different question). So its steps from the turn on are re-run on a fork of
the rebuilt point and checked as the prefix was (`rebuild.check_prefix`: each result
after `normalise`, the workspace hash after each step; a last step that only calls
`submit` is checked by its hash alone, since `submit` is never re-run), and the
scorer judges the fork with the session's whole recorded trajectory.

It joins only when it is one run of the loop, as its siblings are: every recorded
prompt re-renders from the loop's own messages (`AgentRecord.exact`). A session with
a follow-up message or a summary after the turn does not (the store keeps no such
message; its later turns answered something no sibling saw), nor one whose rest is
unfaithful or gets no label; each comes back as the reason, counted by the stage.
Its tokens keep their recorded logprobs and policy versions: the trainer's importance
ratio corrects them like any older policy's.
"""

from __future__ import annotations

import dataclasses

from shadowrl.realtime.judge import RECORDED, Attempt, Scorer
from shadowrl.realtime.rebuild import Rebuilt, check_prefix
from shadowrl.sandbox import Sandbox
from shadowrl.serve.store.schema import TraceStep
from shadowrl.serve.workspaces import ContentHasher
from shadowrl.types import Trajectory

NOT_ONE_RUN = "the session is not one run of the loop after the turn (a follow-up or a summary)"


def _submits(row: TraceStep) -> bool:
    return bool(row.tool_calls) and all(c["name"] == "submit" for c in row.tool_calls)


def rerun_rest(point: Rebuilt, fork: Sandbox) -> str:
    """Re-run the recorded steps from the turn on in `fork` (of the point's checkpoint)
    and check them; '' when faithful, else why not."""
    rest = list(point.rest)
    if [r.index for r in rest] != list(range(point.turn, point.turn + len(rest))):
        return "the store does not hold every step after the turn"
    last = rest.pop() if rest and _submits(rest[-1]) else None
    hasher = ContentHasher(point.copy)
    if (bad := check_prefix(fork, hasher, rest, point.agent)) is not None:
        return f"turn {bad[0] + 1} re-run: {bad[1]}"
    if last is not None and hasher.of(fork) != last.workspace_hash:
        return f"turn {last.index + 1} re-run: the workspace differs from the recorded one"
    return ""


def recorded(point: Rebuilt, score: Scorer) -> Trajectory | str:
    """The session's whole recorded trajectory with `score`'s reward for its continuation
    from the point (the caller masks the prefix), or why it cannot join (docstring)."""
    if not point.record.exact:
        return NOT_ONE_RUN
    traj = point.record.record.trajectory
    fork = point.checkpoint.fork()
    try:
        if why := rerun_rest(point, fork):
            return why
        reward = score(Attempt(fork, traj, RECORDED))
    finally:
        fork.close()
    if reward is None:
        return "the judge gave the recorded continuation no label"
    return dataclasses.replace(traj, reward=reward)
