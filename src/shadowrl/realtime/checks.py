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
  reward, `eval.behaviour.asks_instead_of_acting`), and the divergence of the candidate from the weights that served the
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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

from shadowrl.eval.result import EvalResult


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


def malformed_rate(r: EvalResult) -> float:
    """Share of episodes with at least one failed or malformed tool call."""
    n = episodes(r)
    return sum(s.tool_errors > 0 for t in r.tasks for s in t.samples) / n if n else 0.0


def clarifying_rate(r: EvalResult) -> float:
    """Share of episodes that asked a question instead of acting."""
    n = episodes(r)
    return sum(s.clarifying for t in r.tasks for s in t.samples) / n if n else 0.0


def no_edit_rate(r: EvalResult) -> float:
    """Share of episodes whose edits changed no line."""
    n = episodes(r)
    return sum(s.diff_lines == 0 for t in r.tasks for s in t.samples) / n if n else 0.0


@dataclass(frozen=True)
class Alarm:
    name: str
    value: float
    limit: float

    def __str__(self) -> str:
        return f"{self.name} {self.value:+.3f} > {self.limit:.3f}"


def alarms(
    candidate: EvalResult,
    incumbent: EvalResult,
    kl: float | None,
    *,
    max_malformed_increase: float,
    max_no_edit_increase: float,
    max_clarifying_increase: float,
    max_kl: float,
    mtp: tuple[Sequence[float], Sequence[float]] | None = None,
    max_mtp_drop: float = 0.1,
) -> list[Alarm]:
    """The alarms that fire (empty: none). `mtp`: (parent's, candidate's) acceptance per
    draft position."""
    found = [
        Alarm("malformed_rate_increase", malformed_rate(candidate) - malformed_rate(incumbent),
              max_malformed_increase),
        Alarm("no_edit_rate_increase", no_edit_rate(candidate) - no_edit_rate(incumbent),
              max_no_edit_increase),
        Alarm("clarifying_rate_increase",
              clarifying_rate(candidate) - clarifying_rate(incumbent), max_clarifying_increase),
    ]  # fmt: skip
    if kl is not None:
        found.append(Alarm("kl_to_deployed", kl, max_kl))
    if mtp is not None:
        drop = max((p - c for p, c in zip(*mtp, strict=True)), default=0.0)
        found.append(Alarm("mtp_acceptance_drop", drop, max_mtp_drop))
    return [a for a in found if a.value > a.limit or math.isnan(a.value)]


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
