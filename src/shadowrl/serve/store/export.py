"""Exporting traces: token-level training rows and SWE-bench predictions.

Training rows have the shape of `rl.demos.trajectory_to_json` (what the demo store
and SFT read), one per *branch* of a session: a request that no later request
extends is a leaf, and its chain of `parent_id`s back to the root is one branch (each
of `n > 1` choices starts its own). Along a branch, a request whose prompt starts
with exactly the ids of the conversation so far (its parent's prompt and generated
ids) is appended to the same segment, so earlier replies keep their loss mask and
logprobs; a prompt that diverged (re-rendered history) starts a new segment of the
same trajectory. Prompt tokens have mask False, logprob 0.0 and version -1, as in
`types.Segment`. `end` is `max_tokens` when the branch's last reply hit its length
limit, else `submitted` (the model ended its turn). `reward` is None: feedback is exported raw under `feedback`, and
turning signals into rewards is not the store's job.

SWE-bench export is a subset: agent sessions with a diff become prediction rows
`{"instance_id", "model_name_or_path", "model_patch"}` (the format the SWE-bench
harness reads); the instance id is the session's `task_id`, else its id.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from shadowrl.rl import trajectory_to_json
from shadowrl.serve.store.queries import RequestView, SessionView, iter_sessions
from shadowrl.types import Segment, Trajectory


def branches(requests: Sequence[RequestView]) -> list[list[RequestView]]:
    """Root-to-leaf chains of requests, following `parent_id` (leaves in record order)."""
    by_id = {r.id: r for r in requests}
    parents = {r.parent_id for r in requests}
    out = []
    for leaf in (r for r in requests if r.id not in parents):
        chain: list[RequestView] = []
        node: RequestView | None = leaf
        while node is not None and len(chain) <= len(requests):  # a cycle cannot loop
            chain.append(node)
            node = by_id.get(node.parent_id) if node.parent_id else None
        out.append(chain[::-1])
    return out


def branch_segments(chain: Sequence[RequestView]) -> list[Segment]:
    """The token segments of one branch (see the module docstring)."""
    segments: list[Segment] = []
    ids: list[int] = []
    mask: list[bool] = []
    lps: list[float] = []
    vers: list[int] = []
    for r in chain:
        if ids and list(r.prompt_ids[: len(ids)]) != ids:
            segments.append(Segment(tuple(ids), tuple(mask), tuple(lps), tuple(vers)))
            ids, mask, lps, vers = [], [], [], []
        new_prompt = r.prompt_ids[len(ids) :]
        ids += [*new_prompt, *r.generated_ids]
        mask += [False] * len(new_prompt) + [True] * len(r.generated_ids)
        lps += [0.0] * len(new_prompt) + list(r.logprobs)
        vers += [-1] * len(new_prompt) + list(r.versions)
    if ids:
        segments.append(Segment(tuple(ids), tuple(mask), tuple(lps), tuple(vers)))
    return segments


def _end(finish_reason: str) -> Any:
    """The trajectory `end` of a branch: out of tokens, or the model ended its turn."""
    return "max_tokens" if finish_reason == "length" else "submitted"


def training_rows(view: SessionView) -> Iterator[dict[str, Any]]:
    """One `trajectory_to_json` row per branch of a session, plus trace provenance."""
    feedback = [
        {"signal": f.signal, "value": f.value, "at": f.at.isoformat(), "response_id": f.response_id}
        for f in view.feedback
    ]
    s = view.session
    for chain in branches(view.requests):
        leaf = chain[-1]
        traj = Trajectory(
            s.task_id or s.id, (), (), tuple(branch_segments(chain)), _end(leaf.finish_reason)
        )
        yield {
            **trajectory_to_json(traj),
            "session_id": s.id,
            "request_ids": [r.id for r in chain],
            "token_exact": all(r.token_exact for r in chain),
            "checkpoints": sorted({r.checkpoint for r in chain if r.checkpoint}),
            "feedback": feedback,
        }


def export_training(
    engine: Engine, since: datetime | None = None, exclude_keys: Collection[str] = ()
) -> Iterator[dict[str, Any]]:
    for view in iter_sessions(engine, since, exclude_keys):
        yield from training_rows(view)


def swebench_row(view: SessionView) -> dict[str, Any] | None:
    """A SWE-bench prediction for an agent session with a diff; None otherwise."""
    s = view.session
    if s.kind != "agent" or not s.diff:
        return None
    return {
        "instance_id": s.task_id or s.id,
        "model_name_or_path": s.checkpoint or "shadowrl",
        "model_patch": s.diff,
    }


def export_swebench(
    engine: Engine, since: datetime | None = None, exclude_keys: Collection[str] = ()
) -> Iterator[dict[str, Any]]:
    for view in iter_sessions(engine, since, exclude_keys):
        if (row := swebench_row(view)) is not None:
            yield row
