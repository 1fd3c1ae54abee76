"""The eval-size statement, checked against a computation done by hand."""

import math

import pytest

from shadowrl.pipeline.sizing import clustered_se, eval_size

# Six tasks in three templates; per-task RL − SFT differences:
#   a: 1, 0    b: 0, −0.5    c: 0.5, 0          D = 1/6
# cluster sums of (d − D): a 2/3, b −5/6, c 1/6; squares 16/36 + 25/36 + 1/36 = 7/6
# var(D) = 3/2 · 7/6 / 6² = 7/144, se = √7 / 12 = 0.220479
DIFFS = [1.0, 0.0, 0.0, -0.5, 0.5, 0.0]
TEMPLATES = ["a", "a", "b", "b", "c", "c"]


def test_clustered_standard_error_by_hand():
    assert clustered_se(DIFFS, TEMPLATES) == pytest.approx(math.sqrt(7) / 12)


def test_needed_size_by_hand():
    # z_0.95 + z_0.80 = 1.644854 + 0.841621 = 2.486475
    # factor = (0.220479 · 2.486475 / 0.10)² = 5.482180² = 30.0543
    s = eval_size(DIFFS, TEMPLATES, episodes=12, eval_s=600.0, gain=0.10)
    assert s.factor == pytest.approx(30.0543, abs=1e-3)
    assert (s.needed(12), s.needed(6), s.needed(3)) == (361, 181, 91)  # episodes, tasks, templates
    assert s.factor * s.eval_s == pytest.approx(18032.6, abs=1)  # ~5.0 h of eval at 600 s


def test_a_larger_gain_needs_quadratically_less():
    small = eval_size(DIFFS, TEMPLATES, episodes=12, eval_s=1.0, gain=0.10)
    large = eval_size(DIFFS, TEMPLATES, episodes=12, eval_s=1.0, gain=0.20)
    assert large.factor == pytest.approx(small.factor / 4)


def test_no_variance_or_one_template_cannot_be_sized():
    assert not eval_size([0.0] * 4, list("aabb"), episodes=8, eval_s=1, gain=0.1).sizable
    assert not eval_size([1.0, 0.0], ["a", "a"], episodes=4, eval_s=1, gain=0.1).sizable


def test_a_size_from_a_handful_of_differing_tasks_is_marked_rough():
    from shadowrl.pipeline.report_learning import size_words

    one = eval_size([0.5] + [0.0] * 15, list("aabbccddeeffgghh"), episodes=32, eval_s=1, gain=0.1)
    assert one.sizable and one.rough and one.differing == 1
    assert size_words(one).startswith("Only 1 paired task(s) differ")
    assert not eval_size(DIFFS * 2, TEMPLATES * 2, episodes=24, eval_s=1, gain=0.1).rough
