"""The report's learning section states what its own run measured: RL − SFT (and RL −
SFT-more) clustered by template, each policy's behaviour, the exploration figures, and,
when there is no significant gain, the eval size its own variance calls for."""

import re
from pathlib import Path

import yaml

from eval.builders import from_tasks, make_result
from pipeline.test_report import CONFIG, REWARDS, _rl_row
from shadowrl.eval.result import SampleResult, TaskResult
from shadowrl.metrics import MetricsLogger
from shadowrl.pipeline.report import write_run_report
from shadowrl.pipeline.report_learning import kind_lines
from shadowrl.pipeline.sizing import eval_size

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = ["a", "a", "b", "b", "c", "c"]
SFT = [[False, False]] * 6
# per-task RL − SFT: 1, 0 | 0, −0.5 | 0.5, 0 (test_sizing.py works this one by hand)
RL = [[True, True], [False, False], [False, False], [False, False], [True, False], [False, False]]
SFT_FOR_RL = [[False, False]] * 3 + [[True, False]] + [[False, False]] * 2


def _run(tmp_path: Path, arms: dict[str, list[list[bool]]], metrics=()) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    for stage, outcomes in arms.items():
        (run / f"eval_{stage}").mkdir()
        result = make_result(outcomes, groups=TEMPLATES, pins={"suite": "family:heldout"})
        result.wall_s = 300.0
        result.save(run / f"eval_{stage}/eval.json")
    with MetricsLogger(run, tensorboard=False) as m:
        for step, reward in enumerate(REWARDS, start=1):
            m.log("rl", step, {**_rl_row(step, reward), "groups": 2, "zero_adv_groups": step % 2})
        for kind, step, values in metrics:
            m.log(kind, step, values)
    return run


def test_no_significant_gain_states_the_size_its_own_variance_needs(tmp_path):
    run = _run(tmp_path, {"sft": SFT_FOR_RL, "rl_step6": RL})
    report = write_run_report(run).read_text()
    line = next(x for x in report.splitlines() if x.startswith("- **rl_step6 − sft**"))
    assert "Δ pass@1 +0.167 over 6 paired tasks of 3 templates" in line
    assert "**not a significant gain** at this size" in line
    s = eval_size([1, 0, 0, -0.5, 0.5, 0], TEMPLATES, episodes=12, eval_s=600.0, gain=0.10)
    assert f"standard error {s.se:.3f}" in line and "30.1× this eval" in line
    assert "~91 templates, ~181 tasks, ~361 episodes per arm, ~5.0 h of eval" in line
    assert "SFT-more** (the SFT start trained on fresh demonstrations" in report


def test_a_significant_gain_is_called_one_and_sft_more_is_compared_too(tmp_path):
    win = [[True, True]] * 6
    more = [("sft_more_data", 0, {"demonstrations": 15, "tasks": 16, "budget_s": 540.0}),
            ("sft_more_done", 0, {"best_step": 4, "steps": 5, "stopped": "data"})]  # fmt: skip
    run = _run(tmp_path, {"sft": SFT, "rl_step6": win, "sft_more": SFT_FOR_RL}, more)
    report = write_run_report(run).read_text()
    assert (
        "trained 5 more steps on up to 15 expert demonstrations of RL's 16 tasks, within RL's "
        "wall time (540 s); it ended when its demonstrations ran out first, and kept the "
        "weights of step 4." in report
    )
    assert "a significant gain of rl_step6 over sft." in report
    assert "- **rl_step6 − sft_more**: Δ pass@1 +0.917" in report
    assert "a significant gain of rl_step6 over sft_more." in report
    assert "was not run" not in report


def test_behaviour_per_policy_comes_from_the_episodes(tmp_path):
    run = _run(tmp_path, {"sft": SFT, "rl_step6": RL})
    tasks = [
        TaskResult(instance_id=f"task-{i}", tier="easy", group=g, samples=[
            SampleResult(sample=0, resolved=False, reward=0.0, end="submitted", turns=3,
                         tool_errors=0, tokens=100),
            SampleResult(sample=1, resolved=False, reward=0.0, end="max_turns", turns=6,
                         tool_errors=3, tokens=300),
        ])
        for i, g in enumerate(TEMPLATES)
    ]  # fmt: skip
    from_tasks(tasks, suite="family:heldout").save(run / "eval_rl_step6/eval.json")
    report = write_run_report(run).read_text()
    row = next(x for x in report.splitlines() if x.startswith("| rl_step6 | 12 |"))
    assert [c.strip() for c in row.split("|")[1:-1]] == [
        "rl_step6",
        "12",
        "1.50",
        "4.50",
        "0.50",
        "200",
    ]


def test_exploration_figures_are_the_runs_own(tmp_path):
    scores = [
        ("demo_score", 0, {"policy": p, "nll": n, "entropy": e, "tokens": 900})
        for p, n, e in (("base", 1.234, 0.812), ("sft", 0.321, 0.456), ("rl", 0.333, 0.398))
    ]
    checks = [("sft_check", s, {"arm": "sft", "nll": n, "entropy": 0.5, "tokens": 900})
              for s, n in ((0, 1.234), (4, 0.4), (8, 0.321), (12, 0.35))]  # fmt: skip
    run = _run(tmp_path, {"sft": SFT, "rl_step6": RL}, [*scores, *checks])
    report = write_run_report(run).read_text()
    assert "| sft | 0.456 | 0.321 | 900 |" in report and "| rl | 0.398 | 0.333 | 900 |" in report
    assert "0: 1.234, 4: 0.400, 8: 0.321, 12: 0.350; kept the weights of step 8" in report
    assert "per RL step: 1/2, 0/2, 1/2, 0/2, 1/2, 0/2; 3 of 12 groups in all (25%)" in report


def test_no_figure_from_status_can_appear(tmp_path):
    # Reports used to paste the documented runs' figures (from docs/STATUS.md) into every
    # run's report. Now no line of STATUS appears, and every count has this run's sizes.
    run = _run(tmp_path, {"sft": SFT, "rl_step6": RL})
    report = write_run_report(run).read_text()
    status = (REPO / "docs/STATUS.md").read_text()
    fragments = {x.strip("|- *").strip() for x in re.split(r"[\n;.]", status)}
    assert [f for f in fragments if len(f) > 30 and f in report] == []
    assert not re.search(r"configs/learn-cpu", report)
    fractions = [int(d) for d in re.findall(r"\b\d+/(\d+)\b", report)]
    assert fractions and max(fractions) <= 12  # 12 episodes per arm, 2 groups per step


def _kind_task(i: int, source: str, outcomes: list[bool]) -> TaskResult:
    samples = [
        SampleResult(sample=j, resolved=r, reward=float(r), end="submitted")
        for j, r in enumerate(outcomes)
    ]
    return TaskResult(instance_id=f"t{i}", tier="family", source=source, samples=samples)


def test_bug_kind_is_the_mutation_operator_of_a_mutation_made_task():
    assert _kind_task(0, "family+ast:flip_comparison@f/body.0", []).bug_kind == "flip_comparison"
    assert _kind_task(0, "ast-mutation:return_None", []).bug_kind == "return_None"
    assert _kind_task(0, "ast-mutation:flip_comparison+shift_constant", []).bug_kind == (
        "flip_comparison+shift_constant"
    )
    assert _kind_task(0, "humaneval+ast", []).bug_kind == ""
    assert _kind_task(0, "release-diff:attrs 1->2", []).bug_kind == ""


def test_pass_rates_by_kind_per_policy():
    sft = from_tasks([
        _kind_task(0, "family+ast:flip_comparison@a", [True, False]),
        _kind_task(1, "family+ast:flip_comparison@b", [False, False]),
        _kind_task(2, "family+ast:remove_guard_clause@c", [True, True]),
    ])  # fmt: skip
    rl = from_tasks([
        _kind_task(0, "family+ast:flip_comparison@a", [True, True]),
        _kind_task(1, "family+ast:flip_comparison@b", [True, False]),
        _kind_task(2, "family+ast:remove_guard_clause@c", [False, False]),
    ])  # fmt: skip
    text = "\n".join(kind_lines({"sft": sft, "rl_step4": rl}))
    assert "| flip_comparison | 2 | 1/4 = 0.25 | 3/4 = 0.75 |" in text
    assert "| remove_guard_clause | 1 | 2/2 = 1.00 | 0/2 = 0.00 |" in text


def test_no_table_without_mutation_made_tasks():
    plain = from_tasks([_kind_task(0, "humaneval+ast", [True])])
    assert kind_lines({"sft": plain}) == []
