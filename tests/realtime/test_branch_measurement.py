"""The branching measurement's pilot config (issue 35 §6, planned): it loads, and the
command builds its branching stage with the simulated users as the judge, or refuses
without them; the two arms' commands load and the power plan sizes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowrl.commands.config import load_config
from shadowrl.commands.errors import UsageError
from shadowrl.commands.realtime import branching
from shadowrl.experiments.plan import bite_power
from shadowrl.realtime.branch_stage import StoreBrancher
from shadowrl.realtime.judges import UserJudge
from shadowrl.tasks import load_suite

CONFIG = Path(__file__).parents[2] / "configs" / "realtime-branching.yaml"
PILOT2 = Path(__file__).parents[2] / "docs/results/realtime-branching/pilot2.yaml"


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


def test_pilot_2_judges_by_the_preference_without_noise() -> None:
    """Pilot 2's overlay (pre-registered in docs/results/realtime-branching/README.md)
    changes the judge and the turns and nothing else the arms would compare."""
    one, two = load_config([CONFIG]), load_config([CONFIG, PILOT2])
    assert (two.realtime.branching.judge, two.agent.max_turns) == ("preference", 8)
    assert two.run_dir != one.run_dir and two.realtime.users == one.realtime.users
    assert two.model == one.model and two.train == one.train
    brancher = branching(two, load_suite("demo"))
    assert isinstance(brancher, StoreBrancher) and isinstance(brancher.judge, UserJudge)
    assert not brancher.judge.noisy


def test_the_measurements_arms_load_and_the_plan_sizes_them(tmp_path: Path) -> None:
    """The commands STATUS gives for §6 (prepared, not run): the branching arm at 12
    cycles, the whole-session arm as the same config with branching off and more sessions
    per cycle for equal generated tokens; the plan sizes each before it starts."""
    branched = load_config([CONFIG], ["--realtime.cycles=12"])
    whole = load_config(
        [CONFIG],
        ["--realtime.cycles=12", "--realtime.branching.enabled=false", "--realtime.sessions=36",
         "--run_dir=runs/realtime-branching-whole"],
    )  # fmt: skip
    assert not whole.realtime.branching.enabled and whole.realtime.control
    assert whole.realtime.users == branched.realtime.users, "the same simulated users"
    assert whole.model == branched.model and whole.train == branched.train, "the same start"
    assert whole.realtime.train_steps == branched.realtime.train_steps, "equal optimizer steps"
    # the rates assumed before a pilot (bite 0.5, pass share 0.5): a fall of 0.2 needs 288
    plan = bite_power(branched.realtime, branched.eval.alpha, tmp_path)
    assert plan is not None
    assert (plan.passing_per_half, plan.needed_sessions, plan.planned_sessions) == (72, 288, 288)
    assert plan.reachable
    # the pilot as configured (3 cycles of 24) is a pilot: too few for the fall
    pilot = bite_power(load_config([CONFIG]).realtime, branched.eval.alpha, tmp_path)
    assert pilot is not None and pilot.planned_sessions == 72 and not pilot.reachable
