"""A fixed panel of users, replayed against checkpoints and compared in pairs.

Live sessions cannot compare two checkpoints: each draws its own users, so a
difference in accept rate mixes the policy with who happened to come. The panel holds
the users fixed: the same tasks (the first `panel.tasks` of the users' pool) and the
same sample indices, run through the one eval harness (`eval/runner.py`, with its
pins) on each checkpoint, each episode judged as a panel user judges it
(`preference.Preference.accepts`: tests pass and no planted limit broken; no noise, which
would only add variance).

Two replays compare in pairs with the gate's own statistics (`eval/stats.py`): the
paired bootstrap over tasks (clustered as the gate clusters them) of the per-task
accept-rate difference, with its two-sided 95 % interval, and the exact sign test on
the paired episodes; `eval/gate.check_pins` refuses results that measured different
things. The engine's sampling draws are not shared between the arms (no common random
numbers), so pairs correlate only through their task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shadowrl.episode import EpisodeSpec, PolicyFactory
from shadowrl.eval import ConfigPins, EvalResult, evaluate, stats, write_report
from shadowrl.eval import gate as paired_gate
from shadowrl.eval.config import EvalConfig
from shadowrl.experiments.preference import Preference, Work, sample_accepted
from shadowrl.tasks import Task

CONFIDENCE = 0.95  # of the reported interval: paired_bootstrap's (1 − 2·alpha)


@dataclass(frozen=True)
class PanelScore:
    """One replay, as the panel users saw it."""

    episodes: int
    accepted: int
    resolved: int
    rejected_by_preference: int  # passed the tests, rejected only for the preference

    @property
    def accept_rate(self) -> float:
        return self.accepted / self.episodes if self.episodes else 0.0


def score(r: EvalResult, pref: Preference) -> PanelScore:
    samples = [s for t in r.tasks for s in t.samples]
    return PanelScore(
        episodes=len(samples),
        accepted=sum(sample_accepted(s, pref) for s in samples),
        resolved=sum(s.resolved for s in samples),
        rejected_by_preference=sum(pref.rejects_passing(Work.of_sample(s)) for s in samples),
    )


@dataclass(frozen=True)
class Comparison:
    """Arm a − arm b on the same panel: accept-rate difference, interval, sign test."""

    a: PanelScore
    b: PanelScore
    delta: stats.PairedDifference  # per-task accept rate a − b; low/high: the 95 % interval
    sign: stats.SignTest  # better: a accepted where b was not
    tasks: int

    def to_json(self) -> dict[str, Any]:
        return {
            "a": asdict(self.a) | {"accept_rate": self.a.accept_rate},
            "b": asdict(self.b) | {"accept_rate": self.b.accept_rate},
            "delta": asdict(self.delta),
            "sign": asdict(self.sign),
            "tasks": self.tasks,
            "confidence": CONFIDENCE,
        }

    def __str__(self) -> str:
        d = self.delta
        return (
            f"Δ accept rate {d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}] ({CONFIDENCE:.0%}, "
            f"{self.tasks} tasks × {self.a.episodes // max(self.tasks, 1)}), sign test "
            f"{self.sign.better} better / {self.sign.worse} worse, p = {self.sign.p_two_sided:.3g}"
        )


def compare(
    a: EvalResult,
    b: EvalResult,
    pref: Preference,
    *,
    resamples: int = 5000,
    seed: int = 0,
) -> Comparison:
    """Pair two replays of one panel task by task and sample by sample."""
    paired_gate.check_pins(a, b)  # same tasks, samples, harness and measured config

    def rates(r: EvalResult) -> list[float]:
        return [sum(sample_accepted(s, pref) for s in t.samples) / len(t.samples)
                for t in r.tasks]  # fmt: skip

    def outcomes(r: EvalResult) -> list[bool]:
        return [sample_accepted(s, pref) for t in r.tasks for s in t.samples]

    delta = stats.paired_bootstrap(
        rates(a), rates(b), alpha=(1 - CONFIDENCE) / 2, resamples=resamples, seed=seed,
        clusters=[t.cluster for t in a.tasks],
    )  # fmt: skip
    sign = stats.sign_test(outcomes(a), outcomes(b))
    return Comparison(score(a, pref), score(b, pref), delta, sign, len(a.tasks))


def panel_tasks(pool: Sequence[Task], n: int) -> list[Task]:
    """The panel's users: the first `n` tasks of the pool (all of it if smaller)."""
    if not pool:
        raise ValueError("the users' pool is empty: no panel to replay")
    return list(pool[:n])


async def replay(
    tasks: Sequence[Task],
    factory: PolicyFactory,
    spec: EpisodeSpec,
    *,
    settings: EvalConfig,
    cache_dir: Path,
    pins: ConfigPins,
    seed: int,
    out: Path,
) -> EvalResult:
    """Run the panel on one checkpoint through the eval harness; reused if on disk."""
    if (out / "eval.json").exists():
        return EvalResult.load(out / "eval.json")
    result = await evaluate(
        tasks, factory, spec, settings=settings, cache_dir=cache_dir, config_pins=pins,
        seed=seed, suite="realtime-panel",
    )  # fmt: skip
    write_report(result, out)
    return result
