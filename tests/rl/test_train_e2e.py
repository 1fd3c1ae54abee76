"""End to end: `shadowrl train` with a tiny random model on real tasks and sandboxes.

The model is tiny and random (the other side of the interface); the pipeline under
test is the real one: expert demos through the harness, SFT, the async orchestrator
with the engine, weight store and verifier, held-out evals, report, and resume.
"""

import json
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from shadowrl.commands.main import main
from shadowrl.metrics import read_metrics

TINY = [
    "--model.path=tiny",
    "--pipeline.train_tasks=2",
    "--pipeline.eval_tasks=1",
    "--pipeline.eval_samples=1",
    "--pipeline.eval_base=true",
    "--train.group_size=2",
    "--train.groups_per_step=1",
    "--train.save_every=1",
    "--agent.max_turns=5",
    "--agent.max_new_tokens=200",
    "--orchestrator.inflight_groups=2",
    # the easy suite, not the default family (generated on first use): fast in CI
    "--pipeline.train_suite=",
    "--pipeline.eval_suite=",
    "--pipeline.sft_dev_tasks=0",
    "--pipeline.sft_tasks=0",
    "--pipeline.rl_tasks=all",
]


def _train(run_dir: Path, steps: int) -> int:
    return main(["train", f"--run_dir={run_dir}", f"--train.steps={steps}", *TINY])


def _eval_stages(report: str) -> list[str]:
    """The stage column of the report's held-out eval table."""
    table = report.split("## Held-out evaluation")[1].split("\n\n")[1]
    return [row.split("|")[1].strip() for row in table.splitlines()[2:]]


def test_train_pipeline_runs_end_to_end_and_resumes(tmp_path):
    run = tmp_path / "run"
    assert _train(run, steps=2) == 0
    for stage in ("eval_base", "eval_sft", "eval_rl_step2"):
        assert json.loads((run / stage / "eval.json").read_text())["tasks"]
    sft = [r for r in read_metrics(run / "metrics.jsonl", "sft")]
    assert sft and all(r["nll"] > 0 for r in sft)
    rl = read_metrics(run / "metrics.jsonl", "rl")
    assert [r["step"] for r in rl] == [1, 2]
    assert rl[-1]["prefix_hit_tokens"] > 0  # later turns of each episode reused their KV
    report = (run / "report.md").read_text()
    assert "Held-out evaluation" in report
    assert _eval_stages(report) == ["base", "sft", "rl_step2"]
    state = json.loads((run / "loop_state.json").read_text())
    assert state["step"] == 2
    ckpt = run / "checkpoints" / state["checkpoint"]
    AutoModelForCausalLM.from_pretrained(ckpt)  # a Hugging Face directory

    # rerunning with more steps continues after step 2 instead of starting over
    assert _train(run, steps=3) == 0
    assert [r["step"] for r in read_metrics(run / "metrics.jsonl", "rl")] == [1, 2, 3]
    assert json.loads((run / "loop_state.json").read_text())["step"] == 3
    assert (run / "eval_rl_step3" / "eval.json").exists()
    report = (run / "report.md").read_text()
    assert _eval_stages(report) == ["base", "sft", "rl_step2", "rl_step3"]  # the whole history


def test_kill_9_mid_run_loses_at_most_the_step_in_progress(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    run = tmp_path / "run"
    argv = [
        sys.executable,
        "-m",
        "shadowrl.commands.main",
        "train",
        f"--run_dir={run}",
        "--train.steps=4",
    ]
    argv += [*TINY, "--pipeline.sft=false", "--pipeline.eval_base=false"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = run / "loop_state.json"
    try:
        deadline = time.monotonic() + 300
        while not state.exists():  # behaviour, not timing: wait for the first checkpoint
            assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint written"
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    done = json.loads(state.read_text())["step"]
    assert done >= 1

    assert (
        main(["train", f"--run_dir={run}", "--train.steps=4", *TINY, "--pipeline.sft=false"]) == 0
    )
    steps = [r["step"] for r in read_metrics(run / "metrics.jsonl", "rl")]
    # every step up to the checkpoint is logged once; at most the one in progress is redone
    assert steps[:done] == list(range(1, done + 1))
    assert sorted(set(steps)) == [1, 2, 3, 4] and len(steps) <= 5
    assert json.loads(state.read_text())["step"] == 4


@pytest.mark.slow
def test_warm_start_checks_dev_demos_and_sft_more_runs_for_rls_time(tmp_path):
    # SFT on one task's demo, checked on the demo of a dev task no stage trains on; RL on
    # the other task; SFT-more on that task's demo for RL's wall time; all four evaluated.
    run = tmp_path / "run"
    extra = ["--pipeline.train_tasks=2", "--pipeline.sft_tasks=1", "--pipeline.rl_tasks=unseen",
             "--pipeline.sft_dev_tasks=1", "--pipeline.sft_check_every=1", "--pipeline.sft_more=true",
             "--pipeline.dev_suite="]  # fmt: skip
    assert main(["train", f"--run_dir={run}", "--train.steps=1", *TINY, *extra]) == 0
    checks = read_metrics(run / "metrics.jsonl", "sft_check")
    assert [(r["arm"], r["step"]) for r in checks][:2] == [("sft", 0), ("sft", 1)]
    assert {r["arm"] for r in checks} == {"sft", "sft_more"}
    scored = {r["policy"] for r in read_metrics(run / "metrics.jsonl", "demo_score")}
    assert scored == {"base", "sft", "rl_step1", "sft_more"}
    more = read_metrics(run / "metrics.jsonl", "sft_more_data")[-1]
    rl_s = sum(r["step_s"] for r in read_metrics(run / "metrics.jsonl", "rl"))
    assert more["budget_s"] == pytest.approx(rl_s) and more["demonstrations"] == 1
    assert (run / "eval_sft_more" / "eval.json").exists()
    report = (run / "report.md").read_text()
    assert "- **rl_step1 − sft**" in report and "- **rl_step1 − sft_more**" in report
    assert "| sft_more |" in report  # its behaviour row


@pytest.mark.slow
def test_a_sharded_warm_start_checks_keeps_and_saves_shards(tmp_path):
    # `train.parallel: fsdp` on 2 ranks from the warm start on: SFT's dev checks run on
    # both ranks, its checkpoint is sharded, and the RL stage starts from it read whole.
    run = tmp_path / "run"
    extra = ["--pipeline.train_tasks=2", "--pipeline.sft_tasks=1", "--pipeline.rl_tasks=unseen",
             "--pipeline.sft_dev_tasks=1", "--pipeline.sft_check_every=1",
             "--pipeline.dev_suite=", "--train.world_size=2", "--train.parallel=fsdp"]  # fmt: skip
    assert main(["train", f"--run_dir={run}", "--train.steps=1", *TINY, *extra]) == 0
    checks = read_metrics(run / "metrics.jsonl", "sft_check")
    assert [(r["arm"], r["step"]) for r in checks][:2] == [("sft", 0), ("sft", 1)]
    sft = next((run / "sft").iterdir())
    assert (sft / "dcp").is_dir() and not (sft / "model.safetensors").exists()
    assert (run / "eval_sft" / "eval.json").exists() and (
        run / "eval_rl_step1" / "eval.json"
    ).exists()
