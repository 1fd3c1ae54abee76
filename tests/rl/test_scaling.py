"""The elastic pool's policy by hand: made-up loads on a made-up clock (no Ray)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shadowrl.rl.cluster.config import ElasticConfig
from shadowrl.rl.cluster.scaling import Load, ScaleState, decide, wanted

CFG = ElasticConfig(
    mode="elastic", min_workers=1, max_workers=4, slots=2, idle_s=10, down_cooldown_s=5
)


def test_wanted_gives_every_running_and_waiting_episode_a_slot_within_bounds():
    assert wanted(Load(queued=0, inflight=0, workers=1), CFG) == 1  # never below min
    assert wanted(Load(queued=3, inflight=2, workers=1), CFG) == 3  # ceil(5 / 2)
    assert wanted(Load(queued=40, inflight=8, workers=4), CFG) == 4  # never above max


def test_a_burst_grows_at_once_to_what_the_queue_needs():
    n, st = decide(Load(queued=5, inflight=2, workers=1), now=100.0, state=ScaleState(), cfg=CFG)
    assert n == 4 and st.changed_at == 100.0


def test_up_cooldown_holds_a_second_growth():
    cfg = CFG.model_copy(update={"up_cooldown_s": 3.0})
    st = ScaleState(changed_at=100.0)
    assert decide(Load(6, 2, 2), now=101.0, state=st, cfg=cfg)[0] == 2  # 1 s after a change
    assert decide(Load(6, 2, 2), now=103.0, state=st, cfg=cfg)[0] == 4


def test_shrinks_only_after_idle_s_of_unbroken_spare_capacity():
    st, n = ScaleState(changed_at=0.0), 4
    for t in (100.0, 105.0, 109.9):  # spare since 100: not yet 10 s
        n, st = decide(Load(0, 1, n), now=t, state=st, cfg=CFG)
        assert n == 4
    assert st.spare_since == 100.0
    n, st = decide(Load(0, 1, n), now=110.0, state=st, cfg=CFG)
    assert n == 3  # one step down (down_step=1), not straight to the 1 wanted
    assert st == ScaleState(changed_at=110.0, spare_since=None)


def test_a_burst_between_lulls_resets_the_idle_clock():
    st = ScaleState(changed_at=0.0)
    _, st = decide(Load(0, 0, 4), now=100.0, state=st, cfg=CFG)
    _, st = decide(Load(6, 2, 4), now=108.0, state=st, cfg=CFG)  # every worker needed again
    assert st.spare_since is None
    n, st = decide(Load(0, 0, 4), now=112.0, state=st, cfg=CFG)
    assert n == 4 and st.spare_since == 112.0  # the lull counts from 112, not 100


def test_down_cooldown_spaces_the_shrinks_out():
    st = ScaleState(changed_at=110.0, spare_since=None)
    n, st = decide(Load(0, 0, 3), now=111.0, state=st, cfg=CFG.model_copy(update={"idle_s": 0}))
    assert n == 3  # idle enough, but only 1 s since the last change
    n, _ = decide(Load(0, 0, 3), now=115.0, state=st, cfg=CFG.model_copy(update={"idle_s": 0}))
    assert n == 2


def test_out_of_bounds_counts_are_brought_back_at_once():
    assert decide(Load(0, 0, 0), now=0.0, state=ScaleState(changed_at=0.0), cfg=CFG)[0] == 1
    assert decide(Load(9, 0, 6), now=0.0, state=ScaleState(changed_at=0.0), cfg=CFG)[0] == 4


def test_max_below_min_is_a_config_error():
    with pytest.raises(ValidationError, match="max_workers 1 < min_workers 2"):
        ElasticConfig(min_workers=2, max_workers=1)
