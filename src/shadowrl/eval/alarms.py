"""The gate's alarms: signs of a broken agent the paired pass-rate test cannot see.

On a small pinned suite pass rates are too small to compare, yet a broken candidate
shows in how it works. Each rate alarm compares a behaviour's share of the pinned
suite's episodes, candidate against incumbent, and fires only when the rise exceeds
its limit *and* is significant (one-sided Fisher exact, `eval/stats.py`): on a
4-episode eval one episode moves a rate by 0.25, which is no evidence of anything.

* malformed: at least one failed or malformed tool call;
* no_edit: the episode's edits changed no line;
* clarifying: it asked a question instead of acting (a question dodges a negative
  reward, `eval.behaviour.asks_instead_of_acting`).

Episodes that crashed, or hit their wall-clock limit before any tool call, are left out
of these rates: they measured the machine. The other alarms need what only the trainer
knows: the divergence of the candidate from the weights that served the sessions it was
trained on (mean log π_served − log π_candidate over their tokens, an estimate of
KL(π_served ‖ π_candidate) per token: an absurd step shows up there first), and whatever
a model trained beside the policy measured of itself across the step, each figure
against its own limit (`rl/contributions.py` builds those checks; the trainer hands
them over as alarms to test).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shadowrl.eval.result import EvalResult, SampleResult
from shadowrl.eval.stats import fisher_less


def episodes(r: EvalResult) -> int:
    return sum(len(t.samples) for t in r.tasks)


def crashed(s: SampleResult) -> bool:
    """An episode that measured the box, not the policy: it raised, or its wall-clock
    limit ended it before it made a single tool call (a loaded machine, not a habit)."""
    return s.error is not None or s.end == "crash" or (s.end == "timeout" and s.tool_calls == 0)


# The behaviour each rate alarm counts, per episode that did not crash.
BEHAVIOURS: dict[str, Callable[[SampleResult], bool]] = {
    "malformed": lambda s: s.tool_errors > 0,  # at least one failed or malformed call
    "no_edit": lambda s: s.diff_lines == 0,  # its edits changed no line
    "clarifying": lambda s: s.clarifying,  # asked a question instead of acting
}


def behaviour_count(r: EvalResult, behaviour: str) -> tuple[int, int]:
    """(episodes showing `behaviour`, episodes that did not crash)."""
    acted = [s for t in r.tasks for s in t.samples if not crashed(s)]
    return sum(BEHAVIOURS[behaviour](s) for s in acted), len(acted)


def rate(r: EvalResult, behaviour: str) -> float:
    """Share of episodes (crashes left out) showing `behaviour` (a key of BEHAVIOURS)."""
    k, n = behaviour_count(r, behaviour)
    return k / n if n else 0.0


@dataclass(frozen=True)
class RateTest:
    """One behaviour's rate, candidate against incumbent, and the evidence of a rise."""

    name: str  # e.g. "no_edit_rate_increase"
    candidate: tuple[int, int]  # (episodes showing it, episodes that did not crash)
    incumbent: tuple[int, int]
    increase: float  # candidate rate − incumbent rate
    p: float  # one-sided Fisher exact p-value that the candidate's rate is the higher


def rate_test(candidate: EvalResult, incumbent: EvalResult, behaviour: str) -> RateTest:
    (ck, cn), (ik, i_n) = (behaviour_count(r, behaviour) for r in (candidate, incumbent))
    rise = (ck / cn if cn else 0.0) - (ik / i_n if i_n else 0.0)
    return RateTest(f"{behaviour}_rate_increase", (ck, cn), (ik, i_n), rise,
                    fisher_less(ik, i_n, ck, cn))  # fmt: skip


@dataclass(frozen=True)
class Alarm:
    name: str
    value: float
    limit: float
    test: RateTest | None = None  # the rate alarms' counts and p-value
    alpha: float | None = None  # their significance level

    def __str__(self) -> str:
        text = f"{self.name} {self.value:+.3f} > {self.limit:.3f}"
        if self.test is None:
            return text
        (ck, cn), (ik, i_n), p = self.test.candidate, self.test.incumbent, self.test.p
        return f"{text} ({ck}/{cn} vs {ik}/{i_n}, one-sided Fisher p = {p:.3g} < {self.alpha})"


def alarms(
    candidate: EvalResult,
    incumbent: EvalResult,
    kl: float | None,
    *,
    max_malformed_increase: float,
    max_no_edit_increase: float,
    max_clarifying_increase: float,
    max_kl: float,
    alpha: float = 0.05,
    checked: Sequence[Alarm] = (),
) -> list[Alarm]:
    """The alarms that fire (empty: none). `kl` None: not measured (no KL alarm);
    `checked`: the trainer's other figures, each with its limit (fires above it or on NaN)."""
    limits = {"malformed": max_malformed_increase, "no_edit": max_no_edit_increase,
              "clarifying": max_clarifying_increase}  # fmt: skip
    tests = [(rate_test(candidate, incumbent, b), limit) for b, limit in limits.items()]
    found = [Alarm(t.name, t.increase, limit, t, alpha) for t, limit in tests
             if t.increase > limit and t.p < alpha]  # fmt: skip
    others = []
    if kl is not None:
        others.append(Alarm("kl_to_deployed", kl, max_kl))
    others += checked
    return found + [a for a in others if a.value > a.limit or math.isnan(a.value)]
