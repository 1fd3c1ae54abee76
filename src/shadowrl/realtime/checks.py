"""The post-deploy watch: the first sessions after a deploy, against the previous checkpoint's.

The gate (`eval/gate.decide`: paired test, alarms, power) judges a candidate on the
pinned suite before users see it; the watch judges it on users. Its accept rate,
broken-call rate and clarifying-question rate are compared with those of the sessions
the previous checkpoint served in the same cycle, each by a one-sided Fisher exact test
(`eval/stats.py`); a significant change for the worse rolls back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from shadowrl.eval.stats import fisher_less


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
