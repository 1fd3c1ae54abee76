"""What stands between a trained candidate and users: power, alarms, the post-deploy watch.

The paired gate (`eval/gate.py`) only rejects on evidence, so on a small pinned suite
it promotes almost anything. Three checks make its verdict mean what it says:

* **power** — the smallest drop in pass rate the suite could detect: the δ for which a
  one-sided test at level alpha has the given power, by the normal approximation for
  two proportions over n = tasks × samples episodes each,
      δ ≥ (z_{1−α} + z_power) · sqrt((p(1−p) + (p−δ)(1−p+δ)) / n),
  where p is the incumbent's pass rate. No δ ≤ p satisfies it when even a collapse to
  0 % would go unseen (an incumbent at 6 of 216 episodes: a candidate that solves
  nothing is not distinguishable). When this smallest detectable regression exceeds
  the margin the gate cannot protect users, and promotion is refused (unless
  configured otherwise, which the gate record says).
* **alarms** — rates that show a broken agent even when pass rates are too small to
  compare: malformed-tool-call, no-edit and clarifying-question rates on the pinned
  suite (candidate minus incumbent; a question instead of work dodges a negative
  reward, `eval.behaviour.asks_instead_of_acting`), each firing only when the rise
  exceeds its limit and is significant (one-sided Fisher exact, as the watch tests);
  episodes that crashed, or hit their wall-clock limit before any tool call, are left
  out of these rates (they measured the machine); and the divergence of the candidate from the weights that served the
  sessions it was trained on (mean log π_served − log π_candidate over their tokens, an
  estimate of KL(π_served ‖ π_candidate) per token): an absurd step shows up there first;
  and, with MTP draft heads, the drop of their acceptance per draft position from the
  parent's to the candidate's (`rl/mtp_rl.acceptance`): broken heads would make the
  engine's speculation stop paying, so they do not ship either.
* **watch** — after a deploy, the first sessions' accept rate and broken-call rate
  and clarifying-question rate against the previous checkpoint's, by one-sided Fisher
  exact tests; a significant change for the worse rolls back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

from shadowrl.eval.result import EvalResult, SampleResult


def min_detectable_drop(p: float, n: int, *, alpha: float, power: float) -> float:
    """The smallest δ ∈ (0, p] detectable by the approximation above; inf if none is."""
    if n <= 0 or p <= 0:
        return math.inf
    z = NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(power)

    def detectable(d: float) -> bool:
        q = p - d
        return d >= z * math.sqrt((p * (1 - p) + q * (1 - q)) / n)

    if not detectable(p):
        return math.inf
    lo, hi = 0.0, p  # detectable is monotone in δ on [0, p]
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if detectable(mid) else (mid, hi)
    return hi


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


def _rate(r: EvalResult, behaviour: str) -> float:
    k, n = behaviour_count(r, behaviour)
    return k / n if n else 0.0


def malformed_rate(r: EvalResult) -> float:
    """Share of episodes (crashes left out) with at least one failed or malformed call."""
    return _rate(r, "malformed")


def clarifying_rate(r: EvalResult) -> float:
    """Share of episodes (crashes left out) that asked a question instead of acting."""
    return _rate(r, "clarifying")


def no_edit_rate(r: EvalResult) -> float:
    """Share of episodes (crashes left out) whose edits changed no line."""
    return _rate(r, "no_edit")


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
    mtp: tuple[Sequence[float], Sequence[float]] | None = None,
    max_mtp_drop: float = 0.1,
) -> list[Alarm]:
    """The alarms that fire (empty: none). A rate alarm fires when the candidate's rate
    exceeds the incumbent's by more than its limit *and* the rise is significant (one-sided
    Fisher exact at level `alpha`): on a 4-episode eval one episode moves a rate by 0.25,
    which is no evidence of anything. `mtp`: (parent's, candidate's) acceptance per draft
    position."""
    limits = {"malformed": max_malformed_increase, "no_edit": max_no_edit_increase,
              "clarifying": max_clarifying_increase}  # fmt: skip
    tests = [(rate_test(candidate, incumbent, b), limit) for b, limit in limits.items()]
    found = [Alarm(t.name, t.increase, limit, t, alpha) for t, limit in tests
             if t.increase > limit and t.p < alpha]  # fmt: skip
    others = []
    if kl is not None:
        others.append(Alarm("kl_to_deployed", kl, max_kl))
    if mtp is not None:
        drop = max((p - c for p, c in zip(*mtp, strict=True)), default=0.0)
        others.append(Alarm("mtp_acceptance_drop", drop, max_mtp_drop))
    return found + [a for a in others if a.value > a.limit or math.isnan(a.value)]


def fisher_less(a: int, n_a: int, b: int, n_b: int) -> float:
    """One-sided Fisher exact p-value that rate a/n_a is below rate b/n_b."""
    total, k = n_a + n_b, a + b
    denom = math.comb(total, k)
    lo = max(0, k - n_b)
    return sum(math.comb(n_a, x) * math.comb(n_b, k - x) for x in range(lo, a + 1)) / denom


@dataclass(frozen=True)
class WatchResult:
    """Live signals of the new checkpoint against the previous one's."""

    sessions: int
    accept_rate: float | None
    previous_accept_rate: float | None
    p_accept_drop: float
    broken_rate: float
    previous_broken_rate: float
    p_broken_rise: float
    clarifying_rate: float
    previous_clarifying_rate: float
    roll_back: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LiveCounts:
    """Decisions and conduct counted over some sessions."""

    sessions: int
    accepted: int
    decided: int
    broken: int
    clarifying: int


def watch(new: LiveCounts, old: LiveCounts, *, alpha: float) -> WatchResult:
    """Roll back when the new accept rate is significantly lower, or the broken-call rate
    significantly higher, than the previous checkpoint's (one-sided Fisher, level alpha)."""
    p_acc = fisher_less(new.accepted, new.decided, old.accepted, old.decided)
    p_brk = fisher_less(old.broken, old.sessions, new.broken, new.sessions)
    p_clr = fisher_less(old.clarifying, old.sessions, new.clarifying, new.sessions)

    def rate(k: int, n: int) -> float | None:
        return k / n if n else None

    tests = {"accept rate dropped": p_acc, "broken-call rate rose": p_brk,
             "clarifying-question rate rose": p_clr}  # fmt: skip
    fired = [f"{what} (p = {p:.3g} < {alpha})" for what, p in tests.items() if p < alpha]
    if fired:
        reason = "roll back: " + "; ".join(fired)
    else:
        reason = (
            "keep: no significant change ("
            + ", ".join(f"p {what.split(' rate')[0]} = {p:.3g}" for what, p in tests.items())
            + ")"
        )
    return WatchResult(
        sessions=new.sessions,
        accept_rate=rate(new.accepted, new.decided),
        previous_accept_rate=rate(old.accepted, old.decided),
        p_accept_drop=p_acc,
        broken_rate=rate(new.broken, new.sessions) or 0.0,
        previous_broken_rate=rate(old.broken, old.sessions) or 0.0,
        p_broken_rise=p_brk,
        clarifying_rate=rate(new.clarifying, new.sessions) or 0.0,
        previous_clarifying_rate=rate(old.clarifying, old.sessions) or 0.0,
        roll_back=bool(fired),
        reason=reason,
    )
