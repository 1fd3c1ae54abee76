"""A user's mistake on the command line: one line naming the problem and the fix, exit 2.

Each case is a mistake a new user made; none may print a traceback, and `--debug`
brings the traceback back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from shadowrl.commands.main import main


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    lines = [line for line in err if "shadowrl " in line and "error:" in line]
    assert len(lines) == 1, err
    assert not any("Traceback" in line for line in err)
    return lines[0]


def test_unknown_suite_names_the_built_in_ones(capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(["eval", "--suite", "eassy", "--policy", "noop"], capsys)
    assert "no suite 'eassy'" in line and "'easy'" in line and "'medium'" in line


def test_missing_policy_path_says_what_a_policy_can_be(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such-checkpoint")
    line = _fails(["eval", "--suite", "demo", "--policy", missing], capsys)
    assert f"model {missing!r} does not exist" in line
    assert "'smollm2'" in line and "http(s)://" in line and "Repo id" not in line


def test_run_on_a_directory_without_task_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    line = _fails(["run", "--task", str(tmp_path), "--model", "scripted"], capsys)
    assert f"{tmp_path} has no task.json" in line


def test_serve_on_a_port_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(["serve", "--port", "99999"], capsys)
    assert "port = 99999" in line and "65535" in line


@pytest.mark.skipif(torch.cuda.is_available(), reason="asks for the CUDA this machine lacks")
def test_a_cuda_device_without_cuda_says_what_to_set(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["train", f"--run_dir={tmp_path / 'run'}", "--model.path=tiny", "--model.device=cuda"]
    line = _fails(argv, capsys)
    assert "model.device 'cuda'" in line and "sees no CUDA device" in line


def test_yaml_syntax_error_names_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  lr: [1e-6\n")
    line = _fails(["train", "--config", str(bad)], capsys)
    assert f"config file {bad} is not valid YAML" in line


def test_bad_choice_names_key_value_and_allowed_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = _fails(["eval", "--sandbox.backend=docker"], capsys)
    assert "sandbox.backend = 'docker'" in line
    assert "'auto', 'overlay' or 'local'" in line and "https://" not in line


def test_unknown_key_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(["train", "--train.lrr=1e-6"], capsys)
    assert "unknown key 'train.lrr'" in line


def test_debug_shows_the_traceback() -> None:
    with pytest.raises(ValueError, match=r"sandbox\.backend"):
        main(["eval", "--debug", "--sandbox.backend=docker"])


def test_an_old_config_key_still_loads_under_its_new_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from shadowrl.commands.config import load_config

    old = tmp_path / "old.yaml"
    old.write_text("loop:\n  mode: sync\n")
    assert load_config([old]).orchestrator.mode == "sync"
    assert "'loop' is now 'orchestrator'" in caplog.text


def test_serve_with_an_unreachable_trace_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"postgresql+psycopg://nobody@/traces?host={tmp_path / 'no-server'}"
    line = _fails(["serve", f"--serve.traces={url}"], capsys)  # before any model loads
    assert "cannot open the trace store" in line and url in line


def test_eval_on_ray_refuses_a_served_url(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--policy", "http://127.0.0.1:9/v1", "--suite", "easy:train", "--limit", "1",
            "--backend", "ray"]  # fmt: skip
    line = _fails(argv, capsys)
    assert "evaluates local weights or a reference policy, not a URL" in line


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("--eval.samples=0", "eval.samples"),
        ("--eval.alpha=1.5", "eval.alpha"),
        ("--agent.max_turns=0", "agent.max_turns"),
        ("--agent.top_p=0", "agent.top_p"),
        ("--sandbox.limits.pids=0", "sandbox.limits.pids"),
        ("--tasks.shaping.tool_error=-1", "tasks.shaping.tool_error"),
        ("--train.optimizer.betas=[0.9,1.0]", "train.optimizer.betas"),
        ("--engine.cuda_graph_batch_sizes=[0,8]", "engine.cuda_graph_batch_sizes"),
        ("--realtime.max_no_edit_increase=1.5", "realtime.max_no_edit_increase"),
        ("--realtime.max_mtp_acceptance_drop=2", "realtime.max_mtp_acceptance_drop"),
    ],
)
def test_a_nonsense_value_fails_at_load_naming_the_key(
    capsys: pytest.CaptureFixture[str], override: str, named: str
) -> None:
    line = _fails(["eval", "--suite", "demo", "--policy", "noop", override], capsys)
    assert named in line


def test_a_kl_term_where_no_reference_model_is_kept(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = f"--run_dir={tmp_path / 'run'}"
    line = _fails(["train", run, "--backend=ray", "--train.loss.kl_coef=0.1"], capsys)
    assert "kl_coef > 0 runs on the local backend only" in line
    line = _fails(["train", run, "--train.world_size=2", "--train.loss.kl_coef=0.1"], capsys)
    assert "kl_coef > 0 needs world_size 1" in line
    assert not (tmp_path / "run").exists()  # refused before anything was written
