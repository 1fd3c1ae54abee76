"""Probe, then extend (`train.probe`): the rest of a group is rolled only for a task the
probe solved; a task it never solved costs the probe alone and trains nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from shadowrl.rl.config import TrainConfig
from shadowrl.rl.loss import zero_advantage_groups
from shadowrl.rl.probe import probing
from shadowrl.rl.rollout import Group
from shadowrl.types import Segment, Trajectory


class Episodes:
    """Graded episodes of a task whose outcomes are fixed in advance, in order: what the
    sandboxed rollouts would return, recorded so each call's size and version show."""

    def __init__(self, outcomes: list[float], errors: list[str] | None = None) -> None:
        self.outcomes, self.errors = list(outcomes), errors or []
        self.calls: list[tuple[int, int]] = []  # (version, attempts) per rollout

    async def __call__(self, task: Any, prep: Any, version: int, n: int) -> Group:
        self.calls.append((version, n))
        seg = Segment((1, 2, 3), (False, True, True), (0.0, -0.5, -0.5), (-1, version, version))
        done = [Trajectory(task, (), (), (seg,), "submitted", reward=self.outcomes.pop(0))
                for _ in range(n)]  # fmt: skip
        return Group(task, done, list(self.errors), started_version=version, wall_s=1.0)


def roll(episodes: Episodes, probe: int = 2, size: int = 8, version: int = 3) -> Group:
    return asyncio.run(probing(episodes, probe, size)("t", None, version))


def test_a_probe_without_a_solve_is_the_whole_group() -> None:
    episodes = Episodes([0.0] * 8)
    group = roll(episodes)
    assert episodes.calls == [(3, 2)]  # the other six were never rolled
    assert group.rewards == [0.0, 0.0] and group.ok
    assert zero_advantage_groups(torch.tensor([group.rewards])) == 1  # the trainer skips it


def test_a_probe_with_a_solve_is_extended_to_the_group() -> None:
    episodes = Episodes([0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    group = roll(episodes)
    assert episodes.calls == [(3, 2), (3, 6)]
    assert group.rewards == [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]  # the probe's first
    assert group.wall_s == 2.0 and group.started_version == 3 and group.ok


def test_a_spoiled_probe_is_returned_as_spoiled() -> None:
    episodes = Episodes([1.0] * 8, errors=["sandbox died"])
    group = roll(episodes)
    assert episodes.calls == [(3, 2)] and not group.ok


def test_a_probe_must_leave_room_for_the_rest() -> None:
    for probe in (0, 8):
        with pytest.raises(ValueError, match="0 < probe < group_size"):
            probing(Episodes([]), probe, 8)
    assert TrainConfig(group_size=8, probe=2).probe == 2
    with pytest.raises(ValidationError, match="probe needs flat groups"):
        TrainConfig(group_size=4, probe=4)
    with pytest.raises(ValidationError, match="probe needs flat groups"):
        TrainConfig(group_size=8, probe=2, branching={"enabled": True})
