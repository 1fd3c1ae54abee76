"""The deploy gate: one decision rule for `shadowrl gate` and the real-time loop.

`decide` promotes a candidate only if all of these pass, checked in this order (the
first that refuses is the verdict's `caught_by`):

1. `gate` — the paired test below: no significant regression beyond the margin;
2. alarms (`eval/alarms.py`) — behaviour rates on the pinned suite, and, given the
   trainer's evidence (`Training`), the divergence from the serving weights and what
   the run's components checked of themselves across the step; without it those are
   listed as `unchecked`;
3. power — the smallest drop in pass rate the suite could detect
   (`stats.smallest_detectable_drop` at the incumbent's rate over its episodes). The
   paired test only rejects on evidence, so on a small suite it promotes almost
   anything; when that drop exceeds the margin the gate cannot protect users, and
   promotion is refused unless `require_power` is off (the reason then says
   UNDERPOWERED).

The paired test (default `bootstrap`). On the tasks both runs share, let p_c(i) and
p_i(i) be the candidate's and the incumbent's pass rates on task i (resolved samples
/ samples) and Δ = mean_i [p_c(i) − p_i(i)]. Let U be the one-sided (1 − alpha) upper
confidence bound of Δ from a seeded paired bootstrap over tasks (over groups of
tasks made from the same source, `TaskResult.group`, which are correlated). Then

    reject  iff  U < −margin     (the candidate is significantly worse than
                                   the incumbent minus the margin)
    promote otherwise.

So a candidate is never held back by noise, nor by a drop of at most `margin` in
pass rate, and the incumbent stays only on evidence at level `alpha`. With the
`sign` test the evidence is instead an exact one-sided McNemar/sign test on sample
pairs (sample j of task i under each policy; valid because samples are independent
given the task), and the drop must also exceed the margin: reject iff
p < alpha and Δ < −margin.

An incomplete run (any crashed episode on either side) never promotes: a crash is
counted as unresolved, which could hide a regression or fake an improvement.

What must match (else `PinMismatch`): the suite's content hash and version (a grown
suite's, `tasks/versions.py`), the harness version,
the samples per task, the task ids, and the config sections that shape what is
measured: the agent's budgets, prompt and tools (`agent`), the sandbox limits
(`sandbox`) and the reward shaping (`tasks.shaping`); see `MEASURED_SECTIONS`. The
`model`, `engine`, `train`, `eval` (margin, concurrency), `seed`, `run_dir` and task
cache settings describe the policy or the bookkeeping, and are expected to differ;
which tasks were run is pinned by the suite hash instead of the `tasks` section.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from shadowrl.eval import stats
from shadowrl.eval.alarms import BEHAVIOURS, Alarm, RateTest, alarms, episodes, rate_test
from shadowrl.eval.result import EvalResult, TaskResult

MEASURED_SECTIONS = ("agent", "sandbox", "tasks.shaping")


class PinMismatch(ValueError):
    """The two results measured different things; comparing them would be meaningless."""


class GateDecision(BaseModel):
    """The gate's verdict and the statistics behind it."""

    promote: bool = Field(description="Deploy the candidate.")
    reason: str = Field(description="One human-readable sentence explaining the verdict.")
    test: str = Field(description="Name of the paired test that decided.")
    margin: float = Field(description="Tolerated drop in mean pass rate.")
    alpha: float = Field(description="Significance level.")
    tasks: int = Field(description="Paired tasks compared.")
    candidate_rate: float = Field(description="Candidate's mean per-task pass rate.")
    incumbent_rate: float = Field(description="Incumbent's mean per-task pass rate.")
    delta: stats.PairedDifference = Field(description="Candidate − incumbent, paired bootstrap.")
    sign: stats.SignTest = Field(description="Exact McNemar/sign test on paired samples.")


def check_pins(candidate: EvalResult, incumbent: EvalResult) -> None:
    """Raise `PinMismatch` unless the two results measured the same thing."""
    a, b = candidate.pins, incumbent.pins
    problems = []
    if a.suite_hash != b.suite_hash:
        problems.append(f"suite hash {a.suite_hash} != {b.suite_hash} ({a.suite} vs {b.suite})")
    if a.suite_version != b.suite_version:
        problems.append(f"suite version {a.suite_version} != {b.suite_version}")
    if a.harness_version != b.harness_version:
        problems.append(f"harness version {a.harness_version} != {b.harness_version}")
    if candidate.samples != incumbent.samples:
        problems.append(f"samples per task {candidate.samples} != {incumbent.samples}")
    for section in MEASURED_SECTIONS:
        if a.config_sections.get(section) != b.config_sections.get(section):
            problems.append(f"config section '{section}' differs")
    if [t.instance_id for t in candidate.tasks] != [t.instance_id for t in incumbent.tasks]:
        problems.append("task ids differ")
    if problems:
        raise PinMismatch("results are not comparable: " + "; ".join(problems))


def _sample_pairs(cand: list[TaskResult], inc: list[TaskResult]) -> tuple[list[bool], list[bool]]:
    c_out, i_out = [], []
    for ct, it in zip(cand, inc, strict=True):
        for cs, is_ in zip(ct.samples, it.samples, strict=True):
            c_out.append(cs.resolved)
            i_out.append(is_.resolved)
    return c_out, i_out


Rule = Callable[[stats.PairedDifference, stats.SignTest, float, float], tuple[bool, str]]


def _bootstrap_rule(
    d: stats.PairedDifference, _: stats.SignTest, margin: float, alpha: float
) -> tuple[bool, str]:
    bound = f"upper {1 - alpha:.0%} bound of Δ = {d.upper:+.3f}"
    if d.upper < -margin:
        return True, f"significantly worse: {bound} < −margin = {-margin:+.3f}"
    return False, f"no significant regression: {bound} ≥ −margin = {-margin:+.3f}"


def _sign_rule(
    d: stats.PairedDifference, s: stats.SignTest, margin: float, alpha: float
) -> tuple[bool, str]:
    counts = f"{s.worse} pairs worse, {s.better} better, one-sided p = {s.p_worse:.3g}"
    if s.p_worse < alpha and d.mean < -margin:
        return True, f"significantly worse: {counts} < {alpha}, Δ = {d.mean:+.3f} < −margin"
    return False, f"no significant regression beyond the margin: {counts}, Δ = {d.mean:+.3f}"


RULES: dict[str, Rule] = {"bootstrap": _bootstrap_rule, "sign": _sign_rule}


def gate(
    candidate: EvalResult,
    incumbent: EvalResult,
    *,
    margin: float,
    alpha: float,
    test: str = "bootstrap",
    resamples: int = 5000,
    seed: int = 0,
) -> GateDecision:
    """Decide whether `candidate` may replace `incumbent` (rule in the module docstring)."""
    if test not in RULES:
        raise ValueError(f"unknown gate test {test!r}; choose from {sorted(RULES)}")
    check_pins(candidate, incumbent)
    cand_rates = [t.pass_rate for t in candidate.tasks]
    inc_rates = [t.pass_rate for t in incumbent.tasks]
    delta = stats.paired_bootstrap(
        cand_rates,
        inc_rates,
        alpha=alpha,
        resamples=resamples,
        seed=seed,
        clusters=[t.cluster for t in candidate.tasks],
    )
    sign = stats.sign_test(*_sample_pairs(candidate.tasks, incumbent.tasks))
    regressed, why = RULES[test](delta, sign, margin, alpha)
    crashed = candidate.errors + incumbent.errors
    if crashed:
        promote = False
        reason = f"reject: {crashed} crashed episode(s) make the comparison incomplete; rerun"
    else:
        promote = not regressed
        reason = f"{'promote' if promote else 'reject'}: {why}"
    return GateDecision(
        promote=promote,
        reason=reason,
        test=test,
        margin=margin,
        alpha=alpha,
        tasks=len(cand_rates),
        candidate_rate=sum(cand_rates) / len(cand_rates),
        incumbent_rate=sum(inc_rates) / len(inc_rates),
        delta=delta,
        sign=sign,
    )


# ---------------------------------------------------------------- the one decision rule


@dataclass(frozen=True)
class GateChecks:
    """What besides the paired test may refuse a candidate (the `realtime.*` settings of
    the same names, `RealtimeConfig.gate_checks`)."""

    power: float = 0.8  # the power the detectable drop is sized at
    require_power: bool = True  # refuse when that drop exceeds the margin
    alarm_alpha: float = 0.05  # level of the rate alarms' Fisher tests
    max_malformed_increase: float = 0.1
    max_no_edit_increase: float = 0.1
    max_clarifying_increase: float = 0.1
    max_kl: float = 1.0
    # the alarms the run's components raise from the trainer's evidence (`Training.checked`),
    # named where there is none: `rl/contributions.build_step_checks`
    component_alarms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Training:
    """What only the trainer knows about a candidate."""

    kl: float | None  # nats per token from the serving weights, on the rows it trained on
    checked: tuple[Alarm, ...] = ()  # what the run's components checked, each with its limit


@dataclass(frozen=True)
class Verdict:
    """The gate's decision and every check behind it."""

    promote: bool
    caught_by: str | None  # None (promoted), "pins", "gate", "alarm:<name>" or "power"
    reason: str
    paired: GateDecision | None = None  # None: the results were not comparable
    min_detectable_drop: float | None = None  # None: not even a collapse to 0 is
    underpowered: bool = False
    alarms: tuple[Alarm, ...] = ()
    rates: dict[str, RateTest] = field(default_factory=dict)  # every rate test, fired or not
    unchecked: tuple[str, ...] = ()  # alarms not applied: no training evidence given

    @classmethod
    def incomparable(cls, e: PinMismatch) -> Verdict:
        return cls(False, "pins", f"reject: {e}")

    def record(self) -> dict[str, Any]:
        """The gate record the registry and `cycles.jsonl` keep."""
        out: dict[str, Any] = {"promote": self.promote, "caught_by": self.caught_by,
                               "reason": self.reason}  # fmt: skip
        if self.paired is None:
            return out
        out |= {
            "paired": self.paired.model_dump(),
            "min_detectable_drop": self.min_detectable_drop,
            "underpowered": self.underpowered,
            "alarms": [dataclasses.asdict(a) for a in self.alarms],
            "rates": {b: dataclasses.asdict(t) for b, t in self.rates.items()},
        }
        return out | ({"unchecked": list(self.unchecked)} if self.unchecked else {})


def decide(
    candidate: EvalResult,
    incumbent: EvalResult,
    *,
    margin: float,
    alpha: float,
    checks: GateChecks,
    training: Training | None,
    test: str = "bootstrap",
    resamples: int = 5000,
    seed: int = 0,
) -> Verdict:
    """The verdict on `candidate` (rule in the module docstring); raises `PinMismatch`."""
    d = gate(candidate, incumbent, margin=margin, alpha=alpha, test=test,
             resamples=resamples, seed=seed)  # fmt: skip
    mde = stats.smallest_detectable_drop(
        d.incumbent_rate, episodes(incumbent), alpha=alpha, power=checks.power
    )
    underpowered = mde > margin
    fired = alarms(
        candidate, incumbent, None if training is None else training.kl,
        max_malformed_increase=checks.max_malformed_increase,
        max_no_edit_increase=checks.max_no_edit_increase,
        max_clarifying_increase=checks.max_clarifying_increase, max_kl=checks.max_kl,
        alpha=checks.alarm_alpha, checked=() if training is None else training.checked,
    )  # fmt: skip
    power_note = (
        f"smallest detectable drop {mde:.3f}" if math.isfinite(mde)
        else "not even a collapse to 0 is detectable"
    )  # fmt: skip
    caught: str | None
    if not d.promote:
        caught, reason = "gate", d.reason
    elif fired:
        caught, reason = f"alarm:{fired[0].name}", "reject: alarm " + "; ".join(map(str, fired))
    elif underpowered and checks.require_power:
        caught = "power"
        reason = f"reject: the pinned suite is underpowered ({power_note} > margin {margin})"
    else:
        caught = None
        reason = d.reason + ("" if not underpowered else f" (UNDERPOWERED: {power_note})")
    return Verdict(
        promote=caught is None, caught_by=caught, reason=reason, paired=d,
        min_detectable_drop=mde if math.isfinite(mde) else None, underpowered=underpowered,
        alarms=tuple(fired), rates={b: rate_test(candidate, incumbent, b) for b in BEHAVIOURS},
        unchecked=("kl_to_deployed", *checks.component_alarms) if training is None else (),
    )  # fmt: skip
