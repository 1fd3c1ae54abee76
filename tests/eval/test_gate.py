"""Gate decisions on constructed results: win, regression, within margin, refused pins."""

from __future__ import annotations

from dataclasses import astuple
from pathlib import Path
from typing import Any

import pytest

from shadowrl.eval import stats
from shadowrl.eval.alarms import Alarm
from shadowrl.eval.gate import GateChecks, PinMismatch, Training, Verdict, decide, gate
from shadowrl.eval.result import EvalResult

from .builders import SECTIONS, make_result, rows


@pytest.mark.parametrize("test", ["bootstrap", "sign"])
def test_clear_win_promotes(test: str) -> None:
    d = gate(make_result(rows(20, 4)), make_result(rows(20, 1)), margin=0.02, alpha=0.05, test=test)
    assert d.promote, d.reason
    assert d.delta.mean == pytest.approx(0.75)
    assert (d.sign.worse, d.sign.better) == (0, 60)


@pytest.mark.parametrize("test", ["bootstrap", "sign"])
def test_clear_regression_rejects(test: str) -> None:
    d = gate(make_result(rows(20, 1)), make_result(rows(20, 3)), margin=0.02, alpha=0.05, test=test)
    assert not d.promote
    assert d.reason.startswith("reject: significantly worse")
    assert d.delta.upper < -0.02


def test_small_drop_within_margin_promotes() -> None:
    # 40 tasks, 4 samples: the candidate loses one sample on 2 tasks -> Δ = -2/160 = -0.0125.
    inc = rows(40, 4)
    cand = rows(40, 4)
    cand[0][0] = cand[1][0] = False
    d = gate(make_result(cand), make_result(inc), margin=0.02, alpha=0.05)
    assert d.delta.mean == pytest.approx(-0.0125)
    assert d.promote, d.reason
    # Even with no margin, 2 discordant pairs are no evidence: p = 1/4.
    strict = gate(make_result(cand), make_result(inc), margin=0.0, alpha=0.05, test="sign")
    assert strict.promote and strict.sign.p_worse == 0.25


def test_drop_beyond_margin_rejects_even_when_small_in_absolute_terms() -> None:
    inc = rows(40, 4)
    cand = rows(40, 4)
    for i in range(12):  # 12 of 40 tasks lose one of four samples: Δ = -0.075
        cand[i][0] = False
    d = gate(make_result(cand), make_result(inc), margin=0.02, alpha=0.05)
    assert not d.promote
    assert gate(make_result(cand), make_result(inc), margin=0.2, alpha=0.05).promote


def test_identical_results_promote() -> None:
    r = rows(10, 2)
    assert gate(make_result(r), make_result(r), margin=0.0, alpha=0.05).promote


@pytest.mark.parametrize(
    "pins",
    [
        {"suite_hash": "other"},
        {"harness_version": "v2"},
        {"config_sections": {**SECTIONS, "agent": "a2"}},
        {"config_sections": {**SECTIONS, "tasks.shaping": "r2"}},
    ],
)
def test_pin_mismatch_is_refused(pins: dict[str, Any]) -> None:
    with pytest.raises(PinMismatch, match="not comparable"):
        gate(make_result(rows(5, 1)), make_result(rows(5, 1), pins=pins), margin=0.02, alpha=0.05)


def test_policy_and_model_differences_are_expected() -> None:
    other = {
        "policy": "other",
        "config_digest": "x",
        "config_sections": {**SECTIONS, "model": "m2"},
    }
    d = gate(make_result(rows(5, 1)), make_result(rows(5, 1), pins=other), margin=0.02, alpha=0.05)
    assert d.promote


def test_samples_or_task_mismatch_is_refused() -> None:
    with pytest.raises(PinMismatch, match="samples"):
        gate(make_result(rows(5, 1, 2)), make_result(rows(5, 1, 4)), margin=0.02, alpha=0.05)
    with pytest.raises(PinMismatch, match="task ids"):
        gate(make_result(rows(5, 1)), make_result(rows(6, 1)), margin=0.02, alpha=0.05)


def test_crashed_episodes_never_promote() -> None:
    d = gate(
        make_result(rows(20, 4), crash=True), make_result(rows(20, 1)), margin=0.02, alpha=0.05
    )
    assert not d.promote and "crashed" in d.reason


def test_eval_result_round_trips_through_json(tmp_path: Path) -> None:
    r = make_result(rows(3, 1, 4), crash=True)
    r.save(tmp_path / "eval.json")
    back = EvalResult.load(tmp_path / "eval.json")
    assert back == r and EvalResult.load(tmp_path) == r  # a run's eval dir works too
    with pytest.raises(FileNotFoundError, match="shadowrl eval"):
        EvalResult.load(tmp_path / "missing")
    assert back.overall.errors == 1
    assert sorted(back.overall.pass_k) == [1, 2, 4]
    assert back.by_tier["hard"].tasks == 2


def test_gain_on_many_bugs_of_one_problem_counts_as_one_problem() -> None:
    """Bugs made from one source problem are resampled together (TaskResult.group)."""
    cand_rows, inc_rows = rows(8, 4) + rows(8, 0), rows(16, 0)
    groups = ["humaneval/1"] * 8 + [f"humaneval/{i}" for i in range(2, 10)]
    as_tasks = gate(make_result(cand_rows), make_result(inc_rows), margin=0.0, alpha=0.05)
    grouped = gate(
        make_result(cand_rows, groups=groups),
        make_result(inc_rows, groups=groups),
        margin=0.0,
        alpha=0.05,
    )
    assert as_tasks.delta.mean == grouped.delta.mean == 0.5
    assert as_tasks.delta.low > 0.25
    assert grouped.delta.low == 0.0  # a draw of 9 problems without humaneval/1 gains nothing


def test_pass1_interval_treats_a_group_as_one_cluster() -> None:
    # Two groups of two tasks, 4 samples each: group a all resolved, group b none.
    # Per group (8, 8) and (8, 0): the data cannot tell the groups' episodes apart from
    # one draw each, so the Wilson interval is that of 1 success in 2 draws.
    result = make_result(rows(2, 4) + rows(2, 0), groups=["a", "a", "b", "b"])
    p1 = result.overall.pass1
    assert (p1.value, p1.low, p1.high) == astuple(stats.wilson_interval(1, 2))
    alone = make_result(rows(2, 4) + rows(2, 0)).overall.pass1
    assert alone.high - alone.low < p1.high - p1.low


# ------------------------------------------------------- the one decision rule


def _decide(
    cand: EvalResult, inc: EvalResult, checks: GateChecks, training: Training | None
) -> Verdict:
    return decide(cand, inc, margin=0.02, alpha=0.05, checks=checks, training=training)


def test_decide_refuses_an_underpowered_promotion_unless_told_not_to() -> None:
    # 80 episodes at 25 %: the smallest detectable drop is ~0.17 > margin 0.02
    cand, inc = make_result(rows(20, 4)), make_result(rows(20, 1))
    strict = _decide(cand, inc, GateChecks(), Training(kl=0.0))
    assert (strict.promote, strict.caught_by, strict.underpowered) == (False, "power", True)
    assert strict.min_detectable_drop == pytest.approx(
        stats.smallest_detectable_drop(0.25, 80, alpha=0.05, power=0.8)
    )
    assert "underpowered (smallest detectable drop 0.1" in strict.reason
    lax = _decide(cand, inc, GateChecks(require_power=False), Training(kl=0.0))
    assert lax.promote and lax.caught_by is None and "(UNDERPOWERED: " in lax.reason
    assert lax.unchecked == () and "unchecked" not in lax.record()


def test_decide_checks_the_paired_test_then_the_alarms_then_power() -> None:
    lax = GateChecks(require_power=False)
    worse = _decide(make_result(rows(20, 0)), make_result(rows(20, 4)), lax, Training(kl=5.0))
    assert worse.caught_by == "gate" and worse.reason.startswith("reject: significantly worse")
    same = make_result(rows(20, 2))
    drifted = _decide(same, same, lax, Training(kl=5.0))
    assert drifted.caught_by == "alarm:kl_to_deployed"
    assert drifted.reason == "reject: alarm kl_to_deployed +5.000 > 1.000"
    # a component's own check (`rl/contributions.py`): fires above its limit or on NaN
    fell = Training(kl=0.1, checked=(Alarm("part_drop", 0.3, 0.1),))
    assert _decide(same, same, lax, fell).caught_by == "alarm:part_drop"
    held = Training(kl=0.1, checked=(Alarm("part_drop", 0.1, 0.1),))
    assert _decide(same, same, lax, held).promote
    lost = Training(kl=0.1, checked=(Alarm("part_drop", float("nan"), 0.1),))
    assert _decide(same, same, lax, lost).caught_by == "alarm:part_drop"
    # two eval files alone: the training alarms cannot fire and are listed as unchecked
    blind = _decide(same, same, GateChecks(require_power=False, component_alarms=("part_drop",)),
                    None)  # fmt: skip
    assert blind.promote and blind.unchecked == ("kl_to_deployed", "part_drop")
    record = blind.record()
    assert set(record) == {"promote", "caught_by", "reason", "paired", "min_detectable_drop",
                           "underpowered", "alarms", "rates", "unchecked"}  # fmt: skip
    assert set(record["rates"]) == {"malformed", "no_edit", "clarifying"}


def test_an_incomparable_pair_is_a_verdict_of_its_own() -> None:
    other = {"harness_version": "v2"}
    with pytest.raises(PinMismatch) as e:
        _decide(make_result(rows(5, 1)), make_result(rows(5, 1), pins=other), GateChecks(), None)
    v = Verdict.incomparable(e.value)
    assert (v.promote, v.caught_by) == (False, "pins") and v.reason.startswith("reject: results")
    assert set(v.record()) == {"promote", "caught_by", "reason"}
