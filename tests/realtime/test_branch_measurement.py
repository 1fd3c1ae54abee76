"""The branching measurement's pilot config (issue 35 §6): it loads, and the command
builds its branching stage with the simulated users as the judge, or refuses without
them; the two arms' overlays load, their sizes follow from pilot 2's files, and the power
plan sizes them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from shadowrl.commands.config import load_config
from shadowrl.commands.errors import UsageError
from shadowrl.commands.realtime import branching
from shadowrl.experiments import Preference
from shadowrl.experiments.learning import preference_counts, read_outcomes
from shadowrl.experiments.plan import bite_power
from shadowrl.experiments.power import bite_plan
from shadowrl.realtime.branch_stage import StoreBrancher
from shadowrl.realtime.judges import UserJudge
from shadowrl.tasks import load_suite

CONFIG = Path(__file__).parents[2] / "configs" / "realtime-branching.yaml"
HERE = Path(__file__).parents[2] / "docs/results/realtime-branching"
PILOT2, ARMS, WHOLE = HERE / "pilot2.yaml", HERE / "arms.yaml", HERE / "arms-whole.yaml"


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


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_measurements_arms_load_and_the_plan_sizes_them(tmp_path: Path) -> None:
    """The arms (README's "Arms", written before they ran): the branching arm is pilot 2 in
    a fresh run directory for 12 cycles; the whole-session arm the same with branching off
    and 24 + ceil(G/t) sessions a cycle for equal generated tokens, G and t as pilot 2's
    files measured them; pilot 2's rates size the arms, `--plan` prints the assumed ones."""
    pilot = load_config([CONFIG, PILOT2])
    branched = load_config([CONFIG, PILOT2, ARMS])
    whole = load_config([CONFIG, PILOT2, ARMS, WHOLE])
    assert len({pilot.run_dir, branched.run_dir, whole.run_dir}) == 3, "fresh run directories"
    rest = {"run_dir", "realtime"}
    assert branched.model_dump(exclude=rest) == pilot.model_dump(exclude=rest), "pilot 2's start"
    assert whole.model_dump(exclude=rest) == branched.model_dump(exclude=rest), "the same start"
    rt, wrt = branched.realtime, whole.realtime
    assert rt == pilot.realtime.model_copy(update={"cycles": 12}), "only the cycles differ"
    assert (rt.branching.enabled, rt.branching.judge) == (True, "preference")
    assert not wrt.branching.enabled and wrt.control and wrt.panel == rt.panel
    assert wrt == rt.model_copy(update={"sessions": wrt.sessions, "branching": wrt.branching})
    # equal generated tokens: G continuation tokens a cycle, t tokens a session (pilot 2)
    cycles, users = jsonl(HERE / "pilot2/cycles.jsonl"), jsonl(HERE / "pilot2/users.jsonl")
    g = sum(r["branching"]["generated"] for r in cycles) / len(cycles)
    t = sum(u["tokens"] for u in users) / len(users)
    assert (round(g), round(t), math.ceil(g / t)) == (3979, 203, 20)
    assert wrt.sessions == rt.sessions + math.ceil(g / t) == 44
    # pilot 2's rates: a fall of 0.2 needs 274 sessions; the arms' 288 detect a fall of 0.19
    seen = read_outcomes(HERE / "pilot2")
    counts = preference_counts(seen, list(seen), Preference.of(rt.users))
    bit, passed = counts["rejected_by_preference"], counts["resolved"]
    assert (bit, passed, len(seen)) == (10, 29, 72)
    sized = bite_plan(
        bit / passed, passed / len(seen), rt.users.bite_fall, rt.cycles * rt.sessions,
        pilot_sessions=len(seen), alpha=branched.eval.alpha, power=rt.power,
    )  # fmt: skip
    assert (sized.passing_per_half, sized.needed_sessions, sized.planned_sessions) == (55, 274, 288)
    assert sized.reachable and round(sized.detectable, 2) == 0.19
    # `--plan` on each fresh run directory: no session yet, so the assumed rates (0.5, 0.5)
    for config, planned in ((branched, 288), (whole, 528)):
        plan = bite_power(config.realtime, config.eval.alpha, tmp_path)
        assert plan is not None and plan.reachable
        assert (plan.needed_sessions, plan.planned_sessions) == (288, planned)
    # the pilot as configured (3 cycles of 24) is a pilot: too few for the fall
    small = bite_power(load_config([CONFIG]).realtime, branched.eval.alpha, tmp_path)
    assert small is not None and small.planned_sessions == 72 and not small.reachable
