"""The RL loop's scheduling: staleness bound, failures, weight sync, sync vs async.

The rollout side is a fake (it is the other side of the interface); the loop under
test is the real Orchestrator.
"""

import asyncio
import time

import pytest

from shadowrl.rl.config import BatchConfig, TrainConfig
from shadowrl.rl.orchestrator import Orchestrator, OrchestratorConfig, TaskSampler
from shadowrl.rl.rollout import Group
from shadowrl.types import Segment, Trajectory


def _traj(task_id: str, version: int, reward: float, voided_by: str = "") -> Trajectory:
    seg = Segment((1, 2, 3), (False, True, True), (0.0, -1.0, -1.0), (-1, version, version))
    info = {"resolved": reward > 0, "voided_by": voided_by}
    return Trajectory(task_id, (), (), (seg,), "submitted", reward=reward, info=info)


class FakeTrainer:
    def __init__(self):
        self.version = 0
        self.trained: list[list[list[Trajectory]]] = []

    def train_groups(self, groups):
        self.trained.append([list(g) for g in groups])
        self.version += 1
        return {"loss": 0.0}

    def state_dict(self):
        return {"w": self.version}


class FakeStore:
    def __init__(self):
        self.published = []

    def publish(self, state, version):
        self.published.append(version)
        return {"bytes": 1}

    def fetch(self, version, base=None):
        return {"w": version}


class FakeEngine:
    def __init__(self):
        self.versions = []

    def update_weights(self, state, version, *, delta=False):
        self.versions.append(version)


def _make(
    mode, *, hold=None, fail=(), crash=(), voided=(), lost=(), max_staleness=1, steps=4, inflight=4,
    tasks=None, informative_only=False,
):  # fmt: skip
    trainer, store, engine = FakeTrainer(), FakeStore(), FakeEngine()
    launched = []
    stepped = asyncio.Event()

    async def rollout(task, prepared, version):
        i = len(launched)
        launched.append(version)
        # group i may be held back until a step ends with the trainer at a given version
        if i in (hold or {}):
            while trainer.version < hold[i]:
                await stepped.wait()
                stepped.clear()
        await asyncio.sleep(0)
        if i in fail:
            return Group(task, [], ["boom"], version)
        if i in crash:
            raise RuntimeError("sandbox fell over")
        second = _traj(task, version, 0.0, "test_guard" if i in voided else "")
        if i in lost:  # the second episode died with its worker on every try: masked
            return Group(task, [_traj(task, version, float(i % 2))], [], version, lost=1)
        return Group(task, [_traj(task, version, float(i % 2)), second], [], version)

    cfg = OrchestratorConfig(mode=mode, inflight_groups=inflight, informative_only=informative_only)
    train = TrainConfig(
        steps=steps, group_size=2, groups_per_step=2, batch=BatchConfig(max_staleness=max_staleness)
    )
    errors = []
    steps_seen: list[dict] = []
    orch = Orchestrator(
        cfg=cfg,
        train=train,
        rollout=rollout,
        engine=engine,
        trainer=trainer,
        store=store,
        tasks=tasks or TaskSampler([(f"t{i}", None) for i in range(5)], seed=0),
        on_error=errors.append,
        on_step=lambda step, metrics: (steps_seen.append(metrics), stepped.set()),
    )
    orch.steps_seen = steps_seen  # type: ignore[attr-defined]  (the metrics of each step)
    return orch, trainer, store, engine, launched, errors


def test_sync_mode_trains_only_on_policy_groups():
    orch, trainer, store, engine, launched, _ = _make("sync")
    stats = asyncio.run(orch.run())
    assert len(trainer.trained) == 4
    assert launched == [0, 0, 1, 1, 2, 2, 3, 3]  # each step's rollouts use the newest weights
    assert stats.staleness == [0] * 8
    assert engine.versions == store.published == [1, 2, 3, 4]


def test_each_step_logs_the_rate_of_voided_episodes():
    # sync: step k trains groups 2k and 2k+1, two episodes each; group 2 has one voided
    orch, *_ = _make("sync", voided={2}, steps=3)
    asyncio.run(orch.run())
    assert [m["hack_rate"] for m in orch.steps_seen] == [0.0, 0.25, 0.0]


def test_async_mode_drops_groups_beyond_max_staleness():
    # group 0 finishes only once the trainer is at version 3: lag 3 > max_staleness 1.
    # Two slots in flight for two groups per step: the loop must refill mid-step.
    orch, trainer, _, _, _, _ = _make("async", hold={0: 3}, max_staleness=1, steps=6, inflight=2)
    stats = asyncio.run(orch.run())
    assert stats.groups_stale >= 1
    assert all(lag <= 1 for lag in stats.staleness)
    assert sum(len(step) for step in trainer.trained) == 12


def test_async_mode_keeps_rollouts_in_flight_across_steps():
    orch, _, _, _, launched, _ = _make("async", max_staleness=3, steps=3, inflight=4)
    asyncio.run(orch.run())
    # the pipeline is refilled before each step, so more groups start than are trained
    assert len(launched) > 6
    assert launched[:4] == [0, 0, 0, 0]


def test_failed_group_is_reported_not_trained_as_zero():
    orch, trainer, _, _, _, errors = _make("sync", fail={1})
    stats = asyncio.run(orch.run())
    assert stats.groups_failed == 1 and len(errors) == 1 and errors[0].errors == ["boom"]
    trained_ids = [t.task_id for step in trainer.trained for g in step for t in g]
    assert len(trained_ids) == 4 * 2 * 2  # replacement group launched, nothing trained as reward 0


def test_lost_episodes_are_masked_and_counted_never_scored():
    orch, trainer, *_ = _make("sync", lost={1}, steps=2)
    stats = asyncio.run(orch.run())
    assert stats.episodes_lost == 1 and stats.groups_failed == 0
    assert [len(g) for g in trainer.trained[0]] == [2, 1]  # no stand-in for the lost one
    first = orch.steps_seen[0]
    # rewards: group 0 = (0, 0), group 1's survivor = 1: the mean of 3 episodes, not of 4
    assert first["reward"] == 1 / 3 and first["episodes_lost"] == 1


def test_task_sampler_is_deterministic_and_resumable():
    items = [(i, None) for i in range(7)]
    a = TaskSampler(items, seed=3)
    first = [next(a)[0] for _ in range(10)]
    b = TaskSampler(items, seed=3, position=4)
    assert [next(b)[0] for _ in range(6)] == first[4:]
    assert sorted(first[:7]) == list(range(7))


def test_rejects_unknown_mode():
    with pytest.raises(ValueError):
        OrchestratorConfig(mode="bogus")


def test_a_crashing_rollout_becomes_a_failed_group():
    orch, trainer, _, _, _, errors = _make("async", crash={0, 3}, steps=3, inflight=2)
    stats = asyncio.run(orch.run())
    assert stats.groups_failed == 2 and "sandbox fell over" in errors[0].errors[0]
    assert len(trainer.trained) == 3


class FreshTasks:
    """A stream (the `TaskSource` seam): every draw a task never drawn before."""

    def __init__(self):
        self.position = 0

    def __next__(self):
        self.position += 1
        return f"fresh{self.position}", None

    def close(self):
        pass


def test_a_stream_source_trains_each_task_once_where_epochs_repeat():
    orch, trainer, *_ = _make("sync", tasks=FreshTasks())
    asyncio.run(orch.run())
    ids = [g[0].task_id for step in trainer.trained for g in step]
    assert len(ids) == 8 and len(set(ids)) == 8 and orch.tasks.position == 8
    orch, trainer, *_ = _make("sync")  # epochs over 5 tasks: 8 groups repeat some
    asyncio.run(orch.run())
    assert len({g[0].task_id for step in trainer.trained for g in step}) == 5


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_informative_only_sets_aside_groups_without_an_advantage(mode):
    # group i scores (i % 2, 0): the even ones have no advantage
    orch, trainer, *_ = _make(mode, informative_only=True, max_staleness=8, steps=3)
    stats = asyncio.run(orch.run())
    trained = [g for step in trainer.trained for g in step]
    assert len(trained) == 6 and all(sorted(t.reward for t in g) == [0.0, 1.0] for g in trained)
    assert stats.groups_set_aside >= 6  # groups 0, 2, 4, ... before each informative one
    assert orch.steps_seen[-1]["groups_set_aside"] == stats.groups_set_aside
    assert all(m["zero_adv_groups"] == 0 for m in orch.steps_seen)
    aside = [m["groups_set_aside"] for m in orch.steps_seen]
    per_step = [b - a for a, b in zip([0, *aside], aside, strict=False)]
    # a set-aside group's tokens were generated too (2 episodes of 2 tokens a group); its
    # episodes count in the sampled pass rate, where the trained ones are all half solved
    assert [m["gen_tokens"] for m in orch.steps_seen] == [4 * (2 + n) for n in per_step]
    assert all(m["pass_rate"] == 0.5 for m in orch.steps_seen)
    assert [m["pass_rate_sampled"] for m in orch.steps_seen] == [1 / (2 + n) for n in per_step]


def test_without_informative_only_zero_advantage_groups_are_trained():
    orch, *_ = _make("sync", steps=2)
    stats = asyncio.run(orch.run())
    assert stats.groups_set_aside == 0
    assert [m["zero_adv_groups"] for m in orch.steps_seen] == [1, 1]


def test_each_step_says_where_its_time_went():
    """Waiting for trainable groups, the optimizer step, and the rest (the sync) add up to
    the step's wall time; a trainer that takes 20 ms shows at least that as `train_s`."""
    orch, trainer, *_ = _make("sync", steps=2)
    train_groups = trainer.train_groups

    def slow(groups):
        time.sleep(0.02)
        return train_groups(groups)

    trainer.train_groups = slow
    asyncio.run(orch.run())
    for m in orch.steps_seen:
        assert m["train_s"] >= 0.02 and m["wait_s"] >= 0
        assert m["wait_s"] + m["train_s"] <= m["step_s"]
