"""The run report explains its own numbers: built on a real run directory (eval results
from the project's scorer, metrics rows written by `MetricsLogger`, the config.yaml a
run writes), read back by `write_run_report`, checked against figures computed here
from the same records."""

import re
from pathlib import Path

import yaml

from eval.builders import make_result, rows
from shadowrl.eval import stats
from shadowrl.metrics import MetricsLogger
from shadowrl.pipeline.report import run_evals, write_run_report

# the demo's shape: 8 held-out tasks × 2 samples, 6 RL steps of 2 groups × 4
CONFIG = {
    "run_dir": "runs/default",
    "pipeline": {
        "train_tasks": 24,
        "eval_tasks": 8,
        "eval_samples": 2,
        "sft": True,
        "sft_tasks": 0,
        "rl_tasks": "all",
        "train_suite": "",
    },
    "train": {"steps": 6, "group_size": 4, "groups_per_step": 2},
    "eval": {"margin": 0.02, "alpha": 0.05},
}
REWARDS = [0.625, 1.0, 0.75, 0.875, 0.375, 0.625]


def _rl_row(step: int, reward: float) -> dict[str, float]:
    return {
        "reward": reward,
        "pass_rate": reward,
        "hack_rate": 0.25 * (step % 2),
        "loss": -0.01 * step,
        "gen_tokens": 1000,
        "gen_tokens_per_s": 12.5,
        "step_s": 90.0,
        "staleness_mean": 1.0,
        "zero_adv_groups": 0,
        "groups_failed": 0,
        "groups_stale": 0,
        "version": step,
    }


def _run_dir(tmp_path: Path, sft_outcomes, rl_outcomes, *, config=CONFIG, rewards=REWARDS) -> Path:
    run = tmp_path / "default"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    for stage, outcomes in (("sft", sft_outcomes), ("rl_step6", rl_outcomes)):
        (run / f"eval_{stage}").mkdir()
        make_result(outcomes, pins={"suite": "easy:heldout"}).save(run / f"eval_{stage}/eval.json")
    with MetricsLogger(run, tensorboard=False) as m:
        for i, nll in enumerate([1.2, 0.5, 0.01]):
            m.log("sft", i + 1, {"epoch": float(i // 2), "nll": nll, "loss": nll})
        for step, reward in enumerate(rewards, start=1):
            m.log("rl", step, _rl_row(step, reward))
    return run


def test_zero_of_sixteen_reports_the_interval_the_project_computes(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 0, samples=2))
    report = write_run_report(run).read_text()
    high = run_evals(run)["rl_step6"].overall.pass1.high
    naive = stats.wilson_interval(0, 16).high
    assert abs(naive - 0.194) < 0.001  # what 16 independent episodes would allow
    assert high > naive  # 2 samples of a task are correlated: counted by task
    assert "- **sft, rl_step6**: 0 of 16 episodes resolved. Zero is no proof" in report
    assert f"[0, {high:.3f}] still allows a true pass rate up to ~{high:.0%}" in report
    assert (
        f"would bound the rate at {naive:.3f}; allowing for the correlation it is {high:.3f}"
        in report
    )
    assert "`easy:heldout`, 8 tasks × 2 samples = 16 episodes" in report
    assert "neither resolved an episode" in report


def test_report_says_what_was_trained_on_what(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 0, samples=2))
    report = write_run_report(run).read_text()
    assert "3 optimizer steps over 2 epochs" in report
    assert "first 24 train-split tasks" in report
    assert "NLL went 1.200 -> 0.010" in report
    assert "6 steps; each trains on 2 groups of 4 attempts at one task (8 episodes)" in report
    assert "12 groups in all: at most 12 distinct tasks" in report


def test_recorded_demo_and_task_counts_are_used_when_present(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 0, samples=2))
    with MetricsLogger(run, tensorboard=False) as m:
        m.log("sft_data", 0, {"demonstrations": 23, "tasks": 24})
        m.log("rl_data", 0, {"tasks": 17})
    report = write_run_report(run).read_text()
    assert "23 expert demonstrations of 24 train tasks" in report
    assert "drawn from 17 train tasks" in report
    assert "12 groups in all: at most 12 distinct tasks" in report
    with MetricsLogger(run, tensorboard=False) as m:
        m.log("rl_data", 0, {"tasks": 5})  # a resumed run logs it again: the last one counts
    report = write_run_report(run).read_text()
    assert "12 groups in all: at most 5 distinct tasks trained on, drawn from 5 train" in report
    assert "not recorded" not in report


def test_a_streamed_rl_stage_is_reported_without_a_task_count(tmp_path):
    """`pipeline.rl_stream` logs a stream position, not a task count (the report crashed on it)."""
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 0, samples=2))
    with MetricsLogger(run, tensorboard=False) as m:
        m.log("rl_data", 0, {"stream_position": 0})
    report = write_run_report(run).read_text()
    assert "12 groups in all: at most 12 distinct tasks trained on, each group a fresh" in report
    assert "(`pipeline.rl_stream`), none twice" in report


def test_probed_groups_are_reported_as_at_most_their_size(tmp_path):
    probed = {**CONFIG, "train": {**CONFIG["train"], "probe": 1}}
    report = write_run_report(_run_dir(tmp_path, rows(8, 0), rows(8, 0), config=probed)).read_text()
    assert (
        "each trains on 2 groups of 4 attempts at one task (8 episodes at most: the last 3 "
        "only for a task one of the first 1 solved, `train.probe`; a task they never solved "
        "is a group of 1)"
    ) in report


def test_step_table_holds_the_logged_train_rewards_beside_the_held_out_evals(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 1, samples=2))
    report = write_run_report(run).read_text()
    table = report.split("| step | train reward |")[1].split("\n\n")[0]
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines()[2:]]
    assert [c[0] for c in cells] == ["0", "1", "2", "3", "4", "5", "6"]
    assert [float(c[1]) for c in cells[1:]] == REWARDS
    evals = run_evals(run)
    start, end = evals["sft"].overall.pass1, evals["rl_step6"].overall.pass1
    assert [c[3] for c in cells[1:]] == ["0.25", "0.00"] * 3
    assert cells[0][4] == f"sft: {start.value:.3f} [{start.low:.3f}, {start.high:.3f}]"
    assert cells[6][4] == f"rl_step6: {end.value:.3f} [{end.low:.3f}, {end.high:.3f}]"
    assert all(c[4] == "" for c in cells[1:6])
    early, late = sum(REWARDS[:3]) / 3, sum(REWARDS[3:]) / 3
    assert f"averaged {early:.2f} in steps 1-3 and {late:.2f} in steps 4-6" in report


def test_a_nonzero_eval_gets_its_range_and_the_gates_paired_comparison(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 1, samples=2))
    report = write_run_report(run).read_text()
    p = run_evals(run)["rl_step6"].overall.pass1
    assert f"8 of 16 episodes resolved, pass@1 {p.value:.3f}" in report
    assert f"anywhere from ~{p.low:.0%} to ~{p.high:.0%}" in report
    m = re.search(r"Δ pass@1 ([+-]\d\.\d{3}) over 8 paired tasks", report)
    assert m and float(m[1]) == 0.5
    assert f"`shadowrl gate --candidate {run}/eval_rl_step6 --incumbent {run}/eval_sft`" in report


def test_unequal_samples_are_named_not_compared(tmp_path):
    run = _run_dir(tmp_path, rows(8, 1, samples=2), rows(8, 1, samples=4))
    report = write_run_report(run).read_text()
    assert "not comparable" in report and "samples per task 4 != 2" in report


def test_a_crashed_eval_is_not_reported_as_a_stage(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 0, samples=2))
    (run / "eval_base.crashed").mkdir()
    make_result(rows(8, 0, samples=2), crash=True).save(run / "eval_base.crashed/eval.json")
    assert list(run_evals(run)) == ["sft", "rl_step6"]


def test_report_without_config_still_explains_its_evals(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 0, samples=2))
    (run / "config.yaml").unlink()
    report = write_run_report(run).read_text()
    assert "0 of 16 episodes resolved" in report
    assert "- **RL** (asynchronous GRPO): 6 steps, drawn from the train split." in report


def test_train_rise_without_held_out_gain_is_called_what_it_is(tmp_path):
    rising = [0.125, 0.25, 0.25, 0.5, 0.75, 0.875]
    run = _run_dir(tmp_path, rows(8, 1, samples=2), rows(8, 1, samples=2), rewards=rising)
    report = write_run_report(run).read_text()
    assert "averaged 0.21 in steps 1-3 and 0.71 in steps 4-6" in report
    assert "Held-out pass@1 went 0.500 (sft) -> 0.500 (rl_step6)" in report
    assert "The train tasks rose and held-out did not" in report


def test_one_rl_step_is_reported_as_one(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 0, samples=2), rewards=[0.5])
    report = write_run_report(run).read_text()
    assert "RL's pass rate was 0.50 (one step)" in report


def test_mtp_acceptance_per_draft_position_is_tabled_per_step(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 1, samples=2))
    assert "MTP draft heads" not in write_run_report(run).read_text()  # no heads: no table
    accepts = {step: [0.5 - 0.05 * step, 0.2, 0.05] for step in (1, 2, 3)}
    with MetricsLogger(run, tensorboard=False) as m:  # the last record of a step wins
        for step, acc in accepts.items():
            heads = {f"mtp_accept_{j + 1}": a for j, a in enumerate(acc)}
            m.log("rl", step, {**_rl_row(step, REWARDS[step - 1]), **heads, "spec_tau": 1.25})
    report = write_run_report(run).read_text()
    table = report.split("| step | mtp accept 1 |")[1].split("\n\n")[0]
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines()[2:]]
    assert [c[0] for c in cells] == ["1", "2", "3"]
    assert [[float(x) for x in c[1:4]] for c in cells] == [
        [round(a, 3) for a in accepts[s]] for s in (1, 2, 3)
    ]
    assert all(c[7] == "1.250" and c[8] == "" for c in cells)  # τ logged, accept_1 not


def test_groups_set_aside_untrained_are_reported_only_when_there_are_some(tmp_path):
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 0, samples=2))
    assert "set aside" not in write_run_report(run).read_text()
    with MetricsLogger(run, tensorboard=False) as m:  # `orchestrator.informative_only`
        m.log("rl", 7, {**_rl_row(7, 0.5), "groups_set_aside": 9})
    assert "- zero-advantage groups: 0 trained, 9 set aside untrained" in (
        write_run_report(run).read_text()
    )


def test_the_train_pass_rate_counts_every_sampled_episode_not_only_the_trained(tmp_path):
    # with `informative_only` the trained groups are all half solved; the step sampled more
    run = _run_dir(tmp_path, rows(8, 0, samples=2), rows(8, 0, samples=2), rewards=[0.5])
    with MetricsLogger(run, tensorboard=False) as m:
        m.log("rl", 1, {**_rl_row(1, 0.5), "pass_rate_sampled": 0.125, "groups_set_aside": 6})
    report = write_run_report(run).read_text()
    assert "RL's pass rate was 0.12 (one step)" in report
    assert "| 1 | 0.500 | 0.12 |" in report
