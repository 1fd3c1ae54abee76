"""The branching measurement's pilot config (issue 35 §6, planned): it loads, and the
command builds its branching stage with the simulated users as the judge, or refuses
without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowrl.commands.config import load_config
from shadowrl.commands.errors import UsageError
from shadowrl.commands.realtime import branching
from shadowrl.realtime.branch_stage import StoreBrancher
from shadowrl.realtime.judges import UserJudge
from shadowrl.tasks import load_suite

CONFIG = Path(__file__).parents[2] / "configs" / "realtime-branching.yaml"


def test_the_pilot_branches_judged_by_the_users_reaction() -> None:
    config = load_config([CONFIG])
    b = config.realtime.branching
    assert (b.enabled, b.judge, b.k) == (True, "reaction", 4)
    assert config.realtime.control and config.realtime.users.max_tokens is not None
    pool = load_suite("demo")
    brancher = branching(config, pool)
    assert isinstance(brancher, StoreBrancher) and isinstance(brancher.judge, UserJudge)
    assert brancher.judge.noisy and brancher.judge.user.seed == config.seed
    assert brancher.judge.user.grader("not-a-task") is None, "not a task the users bring"
    with pytest.raises(UsageError, match="--simulate-users"):
        branching(config, None)
