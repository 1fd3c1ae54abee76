"""Rollout groups -> microbatches: advantages per chain, staleness, packing."""

import pytest

from shadowrl.rl.batch import build_rl_batch, build_sft_batches, collate, pack
from shadowrl.rl.row import Row
from shadowrl.types import Segment, Trajectory


def seg(prompt: int, gen: int, version: int = 0, start: int = 10) -> Segment:
    n = prompt + gen
    return Segment(
        token_ids=tuple(range(start, start + n)),
        loss_mask=(False,) * prompt + (True,) * gen,
        logprobs=(0.0,) * prompt + (-0.5,) * gen,
        versions=(-1,) * prompt + (version,) * gen,
    )


def traj(reward: float, *segments: Segment) -> Trajectory:
    return Trajectory("t", (), (), segments, "submitted", reward=reward)


def test_every_segment_of_a_chain_gets_the_chain_advantage():
    group = [traj(1.0, seg(3, 2), seg(4, 3)), traj(0.0, seg(3, 5))]
    batch = build_rl_batch([group], trainer_version=0, max_staleness=2, microbatch_tokens=1000)
    advs = sorted(a for mb in batch.microbatches for a in mb.advantages.tolist())
    assert advs == [-0.5, 0.5, 0.5]
    assert batch.token_budget == 10  # 2 + 3 + 5 generated tokens


def test_positive_advantage_trains_only_the_attempts_above_their_group():
    group = [traj(1.0, seg(3, 2)), traj(0.0, seg(3, 5)), traj(0.0, seg(3, 7)), traj(0.0, seg(3, 1))]
    batch = build_rl_batch(
        [group], trainer_version=0, max_staleness=2, microbatch_tokens=1000, advantage="positive"
    )
    assert [a for mb in batch.microbatches for a in mb.advantages.tolist()] == [0.75]
    assert batch.stats["skipped_zero_adv_segments"] == 3  # no gradient: skipped, never pushed down
    assert batch.token_budget == 15  # all generated tokens: the step size is GRPO's


def test_stale_chains_are_dropped_whole_and_counted_budget_unchanged():
    # The stale head of a chain (its summary-bearing segment) takes its fresh tail with it:
    # training the tail alone would mask the summary by accident.
    group = [traj(1.0, seg(3, 2, version=0), seg(3, 4, version=5)), traj(0.0, seg(3, 6, version=5))]
    batch = build_rl_batch([group], trainer_version=5, max_staleness=2, microbatch_tokens=1000)
    assert batch.stats["stale_chains"] == 1 and batch.stats["stale_segments"] == 2
    assert batch.stats["stale_tokens"] == 6
    assert sum(mb.num_tokens for mb in batch.microbatches) == 6  # the fresh chain only
    assert batch.token_budget == 12  # fixed before filtering: dropping never rescales others


def test_zero_advantage_groups_are_skipped_unless_kl():
    flat = [traj(1.0, seg(2, 2)), traj(1.0, seg(2, 3))]
    live = [traj(1.0, seg(2, 4)), traj(0.0, seg(2, 1))]
    batch = build_rl_batch([flat, live], trainer_version=0, max_staleness=0, microbatch_tokens=99)
    assert batch.stats["zero_adv_groups"] == 1
    assert batch.stats["skipped_zero_adv_segments"] == 2
    assert sum(mb.advantages.numel() for mb in batch.microbatches) == 2
    kept = build_rl_batch(
        [flat, live],
        trainer_version=0,
        max_staleness=0,
        microbatch_tokens=99,
        keep_zero_advantage=True,
    )
    assert sum(mb.advantages.numel() for mb in kept.microbatches) == 4
    assert kept.token_budget == batch.token_budget == 10


def test_unscored_group_is_rejected():
    with pytest.raises(ValueError):
        build_rl_batch(
            [[Trajectory("t", (), (), (seg(1, 1),), "error")]],
            trainer_version=0,
            max_staleness=0,
            microbatch_tokens=10,
        )


def test_packing_respects_the_token_budget():
    rows = [Row(seg(p, g), 1.0) for p, g in [(30, 10), (2, 3), (5, 1), (10, 10), (1, 1), (3, 3)]]
    bins = pack(rows, microbatch_tokens=48, pad_to_multiple=8)
    assert sorted(len(r.segment.token_ids) for b in bins for r in b) == sorted(
        len(r.segment.token_ids) for r in rows
    )
    for b in bins:
        mb = collate(b, pad_to_multiple=8)
        assert mb.input_ids.numel() <= 48
    # A row longer than the budget still trains, alone.
    assert len(pack([Row(seg(90, 10), 1.0)], microbatch_tokens=48)) == 1


def test_collate_pads_right_and_masks_pads_and_first_token():
    mb = collate([Row(seg(0, 3), 1.0), Row(seg(2, 7), -1.0)], pad_id=0, pad_to_multiple=4)
    assert mb.input_ids.shape == (2, 12)
    assert mb.loss_mask.sum(1).tolist() == [2, 7]  # first token has no prefix
    assert mb.loss_mask[0, 3:].any().item() is False
    assert (mb.behaviour_logprobs[~mb.loss_mask] == 0).all()
    assert (mb.versions[~mb.loss_mask] == -1).all()


def test_sft_batches_split_by_generated_tokens():
    demos = [traj(0.0, seg(4, 5)) for _ in range(5)]
    steps = build_sft_batches(demos, batch_tokens=10, microbatch_tokens=64)
    assert [b.token_budget for b in steps] == [10, 10, 5]
