"""The control arm's feedback: the same rewards, shuffled among the sessions of a cohort.

A candidate trained on real feedback may improve for reasons that have nothing to do
with what users said: any update on the policy's own samples moves it (sharpening,
drift). The control trains on the same sessions, the same number of steps, with each
cohort's labels permuted, so the reward no longer tracks the session it is attached
to. Its cohort means, and so the rows and tokens trained, stay those of the real arm;
what differs between the arms is only whether feedback and behaviour correspond. The
panel's paired difference candidate − control is then the effect of learning *from
feedback*.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from shadowrl.realtime.config import Cohort
from shadowrl.realtime.rewards import Reward
from shadowrl.realtime.rows import cohort_key
from shadowrl.realtime.sessions import ProductionSession


def permuted_rewards(
    sessions: Sequence[ProductionSession], rewards: Sequence[Reward], cohort: Cohort, seed: int
) -> list[Reward]:
    """`rewards` with the labeled ones of each cohort shuffled among themselves.

    Unlabeled sessions (value None) keep their place: they stay out of training in
    both arms. Deterministic in `seed`.
    """
    if len(sessions) != len(rewards):
        raise ValueError("one reward per session")
    rng = random.Random(seed)
    places: dict[str, list[int]] = defaultdict(list)
    for i, (s, r) in enumerate(zip(sessions, rewards, strict=True)):
        if r.value is not None:
            places[cohort_key(s, cohort)].append(i)
    out = list(rewards)
    for key in sorted(places):
        idx = places[key]
        shuffled = [rewards[i] for i in idx]
        rng.shuffle(shuffled)
        for i, r in zip(idx, shuffled, strict=True):
            out[i] = r
    return out
