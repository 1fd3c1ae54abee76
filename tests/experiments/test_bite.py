"""The planted preference's bite over a run, with hand-computed answers: how many sessions
the halves test needs (`power.bite_plan`), where the halves split and the test itself
(`trend.bite_trend`), and the plan a resumed run reads from its recorded sessions."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import pytest

from realtime.rows import a_row
from shadowrl.commands.config import load_config
from shadowrl.eval.stats import PairedDifference, SignTest
from shadowrl.experiments import power, trend
from shadowrl.experiments.plan import bite_power
from shadowrl.experiments.preference import Preference
from shadowrl.experiments.row import ComparisonRow, PanelRow, PreferenceCounts, ScoreRow
from shadowrl.experiments.trend import Bitten
from shadowrl.experiments.users import cycle_of
from shadowrl.realtime.context import user_id
from shadowrl.realtime.record import to_json

TINY = str(Path(__file__).parents[2] / "configs" / "realtime-tiny.yaml")


def test_the_bite_plan_matches_the_hand_computed_size() -> None:
    # a fall from 0.5 to 0.3 has the variance of a rise 0.5 → 0.7: z² = 6.182557,
    # n = 6.182557 · (0.25 + 0.21) / 0.04 = 71.1 → 72 passing per half; at a pass share
    # of 0.5 that is 2 · 72 / 0.5 = 288 sessions
    short = power.bite_plan(0.5, 0.5, 0.2, 24)
    assert (short.passing_per_half, short.needed_sessions) == (72, 288)
    assert not short.reachable and short.detectable == math.inf  # 6 per half: not even to 0
    assert "too few" in str(short) and "none" in str(short) and "assumed" in str(short)
    sized = power.bite_plan(0.5, 0.5, 0.2, 288, pilot_sessions=40)
    assert sized.reachable and sized.detectable == pytest.approx(0.2, abs=2e-3)
    assert "the 40 sessions recorded" in str(sized)
    assert power.bite_plan(0.1, 0.5, 0.2, 24).fall == 0.1  # at most a fall to 0
    with pytest.raises(ValueError):
        power.bite_plan(0.0, 0.5, 0.2, 24)  # a preference that never bites cannot fall


def row(cycle: int, sessions: int, resolved: int, bit: int) -> Bitten:
    return cycle, PreferenceCounts(sessions, resolved, bit, 0, 0, bit)


def test_the_halves_split_the_sessions_most_nearly_in_two() -> None:
    # cumulative 12, 24, 36, 60 of 84: |2·36 − 84| = 12 is the least
    rows = [row(c, n, 0, 0) for c, n in enumerate([12, 12, 12, 24, 24], 1)]
    assert trend.halves(rows) == 3
    assert trend.halves(rows[:2]) == 1


def test_the_bite_trend_tests_a_fall_with_fishers_exact_p() -> None:
    # 6/8 then 2/8: P(X ≤ 2), X ~ hypergeometric(16, 8, 8) = (1 + 64 + 784) / 12870
    (text, _) = trend.bite_trend([row(1, 10, 8, 6), row(2, 10, 8, 2)])
    assert "cycles 1–1 (10 sessions) 6/8 = 0.75" in text
    assert "cycles 2–2 (10 sessions) 2/8 = 0.25" in text
    assert "fall +0.500" in text and f"p {849 / 12870:.3g}" in text
    (rise, _) = trend.bite_trend([row(1, 10, 8, 2), row(2, 10, 8, 6)])
    # a rise is no evidence of a fall: P(X ≤ 6) = 1 − (64 + 1) / 12870
    assert "fall -0.500" in rise and f"p {1 - 65 / 12870:.3g}" in rise
    assert trend.bite_trend([row(1, 10, 8, 6)]) == []  # one cycle has no halves


def outcome(i: int, resolved: bool, tokens: int) -> str:
    return json.dumps({
        "session_id": f"s{i}", "resolved": resolved, "diff_lines": 2, "turns": 3,
        "tokens": tokens,
    })  # fmt: skip


def test_a_resumed_run_sizes_its_sessions_from_those_it_recorded(tmp_path: Path) -> None:
    argv = [f"--run_dir={tmp_path}", "--realtime.users.max_tokens=100",
            "--realtime.cycles=3", "--realtime.sessions=4"]  # fmt: skip
    config = load_config([TINY], argv)
    fresh = bite_power(config.realtime, config.eval.alpha, tmp_path)
    assert fresh is not None and (fresh.bite, fresh.pilot_sessions) == (0.5, 0)
    assert fresh.planned_sessions == 12
    # 4 recorded sessions: 3 pass, the preference rejects 2 of them (over 100 tokens)
    lines = [outcome(0, True, 150), outcome(1, True, 120), outcome(2, True, 50),
             outcome(3, False, 300)]  # fmt: skip
    (tmp_path / "users.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "cycles.jsonl").write_text(to_json(a_row(1)) + "\n")
    resumed = bite_power(config.realtime, config.eval.alpha, tmp_path)
    assert resumed is not None
    assert (resumed.bite, resumed.pass_share) == (pytest.approx(2 / 3), 0.75)
    assert (resumed.pilot_sessions, resumed.planned_sessions) == (4, 4 + 2 * 4)
    plain = load_config([TINY], argv[:1])
    assert bite_power(plain.realtime, plain.eval.alpha, tmp_path) is None  # nothing planted


def passing(cycle: int, i: int, task: str, tokens: int) -> dict[str, object]:
    return {"user": user_id(cycle, i), "task_id": task, "resolved": True, "diff_lines": 2,
            "turns": 4, "tokens": tokens}  # fmt: skip


TERSE = Preference(max_tokens=100)


def test_within_tasks_matches_the_hand_computed_cmh_test() -> None:
    # task a: 3 of 4 bitten in cycle 1, 1 of 4 in cycle 2: E = 4·4/8 = 2,
    # V = 4·4·4·4 / (8²·7) = 4/7; task b never bitten (E = V = 0); task c only in cycle 1
    a = [passing(1, i, "a", 150 if i < 3 else 50) for i in range(4)]
    a += [passing(2, i, "a", 150 if i < 1 else 50) for i in range(4)]
    b = [passing(c, i, "b", 50) for c in (1, 2) for i in range(4, 6)]
    c = [passing(1, 9, "c", 150)]
    s = trend.within_tasks([*a, *b, *c], TERSE, second_half_from=2)
    assert (s.strata, s.mixed, s.observed, s.expected) == (2, 1, 1, 2.0)
    assert s.variance == pytest.approx(4 / 7)
    assert s.p == pytest.approx(NormalDist().cdf((1 - 2 + 0.5) / math.sqrt(4 / 7)))
    assert "2 tasks passing in both halves, 1 of them bitten on some" in trend.within_text(s)


def test_a_fall_from_the_task_mix_alone_shows_pooled_but_not_within_tasks() -> None:
    # cycle 1 drew only the wordy task, cycle 2 only the terse one: the pooled bite falls
    # 8/8 → 0/8 (Fisher p = 1/12870), but no task passed in both halves
    wordy = [passing(1, i, "wordy", 150) for i in range(8)]
    terse = [passing(2, i, "terse", 50) for i in range(8)]
    (pooled, _) = trend.bite_trend([row(1, 8, 8, 8), row(2, 8, 8, 0)])
    assert f"p {1 / 12870:.3g}" in pooled
    s = trend.within_tasks([*wordy, *terse], TERSE, second_half_from=2)
    assert (s.strata, s.p) == (0, 1.0)
    with pytest.raises(ValueError):
        cycle_of("user-7")
    assert cycle_of(user_id(12, 3)) == 12


def paneled(better: int, worse: int) -> PanelRow:
    """A panel of 8 pairs whose candidate-vs-control comparison has these discordant pairs
    (the pooled test reads the counts alone; the rest is filler)."""
    score = ScoreRow(8, 0, 0, 0, 0.0)
    sign = SignTest(worse=worse, better=better, p_worse=1.0, p_two_sided=1.0)
    delta = PairedDifference(mean=0.0, upper=0.0, low=0.0, high=0.0)
    made = ComparisonRow(a=score, b=score, delta=delta, sign=sign, tasks=1, confidence=0.95)
    return PanelRow(scores={}, candidate_vs_control=made)


def test_the_panel_pooled_over_cycles_matches_the_hand_computed_sign_test() -> None:
    # 16 pairs, 3 better and 1 worse: mean 2/16; P(X ≤ 1 | 4, ½) = 5/16; the pairs' sample
    # variance (4/16 − (1/8)²) · 16/15 = 1/4, so the half-width is 1.96 · √(1/4 / 16)
    rows = [paneled(2, 0), PanelRow(scores={}), paneled(1, 1)]  # cycle 2: not compared
    p = trend.pooled_panel(rows, "candidate_vs_control")
    assert p is not None and (p.cycles, p.pairs, p.better, p.worse) == (2, 16, 3, 1)
    assert (p.mean, p.p_better) == (0.125, 5 / 16)
    assert p.interval() == pytest.approx((0.125 - 0.245, 0.125 + 0.245), abs=1e-3)
    # discordant share 4/16: (1.645·½ + 0.842·√0.24)² / 0.01 = 152.4 → 153 pairs
    assert p.pairs_needed(0.1) == 153
    assert "153 pairs" in trend.pooled_text(p, 0.1)
    assert trend.pooled_panel(rows, "control_vs_deployed") is None
    tied = trend.pooled_panel([paneled(0, 0)], "candidate_vs_control")
    assert tied is not None and tied.pairs_needed(0.1) is None  # no discordant pair
