"""The post-deploy watch on hand-computed numbers."""

from __future__ import annotations

from shadowrl.realtime.checks import LiveCounts, watch


def test_watch_rolls_back_on_a_significant_accept_drop_only() -> None:
    old = LiveCounts(sessions=8, accepted=7, decided=8, broken=0, clarifying=0)
    bad = watch(LiveCounts(8, 0, 8, 0, 0), old, alpha=0.05)
    assert bad.roll_back and "accept rate dropped" in bad.reason
    noisy = watch(LiveCounts(8, 5, 8, 0, 0), old, alpha=0.05)
    assert not noisy.roll_back
    broken = watch(LiveCounts(8, 7, 8, 6, 0), old, alpha=0.05)
    assert broken.roll_back and "broken-call rate rose" in broken.reason
