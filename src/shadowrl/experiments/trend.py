"""Tests over a whole run: did the preference bite less often, did the panel gain?

The run's cycles are split where their sessions fall most nearly in two (`halves`).
`bite_trend` compares the bite rate (passing sessions the preference alone rejected)
of the first half with the second: the one-sided Fisher exact test `power.BitePlan`
sizes. Users draw their tasks afresh each cycle and the bite is mostly a property of
the task (how wordy the policy is on it), so a fall can come from the task mix alone;
`within_tasks` asks the same question inside each task, by the Cochran–Mantel–Haenszel
test (`eval/stats.cmh_fall`) over per-task 2 × 2 tables (half × bitten, passing sessions
only). Only tasks passing in both halves and bitten on some of those passes but not all
carry information (V_k > 0): a task the preference always or never bites cannot show a
fall within it.

`pooled_panel` adds up one panel comparison (candidate − control: learning from the
feedback itself) over every cycle, for the power a single 8-episode panel lacks.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from shadowrl.eval.stats import (
    Stratified,
    binomial_tail,
    cmh_fall,
    fisher_less,
    mean_interval,
    paired_episodes_needed,
    wilson_interval,
)
from shadowrl.experiments.learning import work_of
from shadowrl.experiments.preference import Preference
from shadowrl.experiments.row import PanelRow, PreferenceCounts
from shadowrl.experiments.users import cycle_of


def bite_text(bit: int, passed: int) -> str:
    """`bit` of `passed` passing sessions rejected, with the rate's Wilson 95 % interval."""
    if not passed:
        return f"{bit}/0"
    e = wilson_interval(bit, passed)
    return f"{bit}/{passed} = {e.value:.2f} [{e.low:.2f}, {e.high:.2f}]"


# a cycle and its preference counts
Bitten = tuple[int, PreferenceCounts]


def halves(rows: Sequence[Bitten]) -> int:
    """The cycle index splitting `rows` into two runs of sessions most nearly equal."""
    total, cum = sum(p.sessions for _, p in rows), 0
    best = (math.inf, 1)
    for k, (_, p) in enumerate(rows[:-1], 1):
        cum += p.sessions
        best = min(best, (abs(2 * cum - total), k))
    return best[1]


def bite_trend(rows: Sequence[Bitten]) -> list[str]:
    """The bite in the run's first half of sessions against its second, with the one-sided
    Fisher exact p of a fall."""
    if len(rows) < 2:
        return []
    k = halves(rows)
    (b1, n1, s1), (b2, n2, s2) = (
        (sum(p.rejected_by_preference for _, p in part), sum(p.resolved for _, p in part),
         sum(p.sessions for _, p in part))
        for part in (rows[:k], rows[k:])
    )  # fmt: skip
    fall = f"{b1 / n1 - b2 / n2:+.3f}" if n1 and n2 else "—"
    first, last = rows[0][0], rows[-1][0]
    return [
        f"Bite over the run's halves: cycles {first}–{rows[k - 1][0]} ({s1} sessions) "
        f"{bite_text(b1, n1)}, cycles {rows[k][0]}–{last} ({s2} sessions) "
        f"{bite_text(b2, n2)}; fall {fall}, one-sided Fisher exact p "
        f"{fisher_less(b2, n2, b1, n1):.3g}.",
        "",
    ]


def within_tasks(
    outcomes: Iterable[dict[str, Any]], pref: Preference, second_half_from: int
) -> Stratified:
    """The CMH test of a fall in the bite from cycles before `second_half_from` to the
    rest, task by task (`outcomes` as `learning.read_outcomes` gives them)."""
    cells: dict[str, list[list[int]]] = defaultdict(lambda: [[0, 0], [0, 0]])  # half, bit
    for o in outcomes:
        work = work_of(o)
        if work.resolved:
            half = int(cycle_of(o["user"]) >= second_half_from)
            cells[o["task_id"]][half][int(pref.rejects_passing(work))] += 1
    tables = (((n1[0], n1[1]), (n2[0], n2[1])) for n1, n2 in cells.values())
    return cmh_fall(tables)


def within_text(s: Stratified) -> str:
    return (
        f"Within tasks ({s.strata} tasks passing in both halves, {s.mixed} of them bitten on "
        f"some passing sessions but not all): {s.observed} passing sessions "
        f"of the second half bitten against {s.expected:.1f} expected from each task's "
        f"pooled rate; one-sided Cochran–Mantel–Haenszel p {s.p:.3g}."
    )


@dataclass(frozen=True)
class Pooled:
    """One panel comparison pooled over every cycle that made it: each cycle's pairs are
    its own (a new checkpoint pair on the same panel), and under the null each discordant
    pair is as likely to go either way, so the pooled exact sign test stays valid."""

    pair: str  # e.g. "candidate_vs_control"
    cycles: int
    pairs: int
    better: int
    worse: int
    p_better: float  # one-sided exact sign-test p that the first arm is better

    @property
    def mean(self) -> float:
        return (self.better - self.worse) / self.pairs

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Normal interval of the mean paired difference (each pair −1, 0 or +1)."""
        ties = self.pairs - self.better - self.worse
        e = mean_interval([1.0] * self.better + [-1.0] * self.worse + [0.0] * ties, confidence)
        return e.low, e.high

    def pairs_needed(self, d: float, *, alpha: float = 0.05, power: float = 0.8) -> int | None:
        """Pairs a run would need to detect `d` at this run's discordant share (None: too few
        discordant pairs to say)."""
        share = (self.better + self.worse) / self.pairs
        return paired_episodes_needed(share, d, alpha=alpha, power=power) if share > d * d else None


def pooled_panel(panels: Sequence[PanelRow], pair: str) -> Pooled | None:
    made = [c for p in panels if (c := p.pairs().get(pair)) is not None]
    if not made:
        return None
    better, worse = sum(c.sign.better for c in made), sum(c.sign.worse for c in made)
    pairs = sum(c.a.episodes for c in made)
    return Pooled(pair, len(made), pairs, better, worse, binomial_tail(worse, better + worse))


def pooled_text(p: Pooled, effect: float) -> str:
    low, high = p.interval()
    need = p.pairs_needed(effect)
    sized = (
        f"at its discordant share ({p.better + p.worse}/{p.pairs}) +{effect:.2f} needs {need} "
        f"pairs (McNemar)" if need is not None else "too few discordant pairs to size a run"
    )  # fmt: skip
    return (
        f"{p.pair.replace('_vs_', ' − ')} pooled over {p.cycles} cycles: {p.mean:+.3f} "
        f"[{low:+.3f}, {high:+.3f}] over {p.pairs} pairs ({p.better} better, {p.worse} worse; "
        f"one-sided exact sign p {p.p_better:.3g}); {sized}."
    )
