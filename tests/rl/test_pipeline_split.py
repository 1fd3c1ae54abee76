"""Which train tasks SFT and RL see (`pipeline.sft_tasks`, `pipeline.rl_tasks`)."""

import pytest
from pydantic import ValidationError

from shadowrl.rl.train_cli import PipelineConfig, split_train_tasks
from shadowrl.tasks import load_suite


def _ids(tasks):
    return [t.instance_id for t in tasks]


def test_unseen_gives_rl_only_the_tasks_sft_had_no_demo_of():
    tasks = load_suite("easy", "train")[:10]
    sft, rl = split_train_tasks(tasks, PipelineConfig(sft_tasks=4, rl_tasks="unseen"))
    assert _ids(sft) == _ids(tasks[:4]) and _ids(rl) == _ids(tasks[4:])


def test_all_gives_rl_every_task_whatever_sft_saw():
    tasks = load_suite("easy", "train")[:10]
    sft, rl = split_train_tasks(tasks, PipelineConfig(sft_tasks=4))
    assert _ids(sft) == _ids(tasks[:4]) and _ids(rl) == _ids(tasks)
    sft, rl = split_train_tasks(tasks, PipelineConfig())  # defaults: both get everything
    assert _ids(sft) == _ids(rl) == _ids(tasks)


@pytest.mark.parametrize(
    "fields",
    [
        {"rl_tasks": "unseen"},  # SFT on all tasks leaves none unseen
        {"rl_tasks": "unseen", "sft_tasks": 4, "sft": False},
        {"rl_tasks": "unseen", "sft_tasks": 8, "train_tasks": 8},
    ],
)
def test_a_split_that_leaves_rl_nothing_is_refused_at_config_time(fields):
    with pytest.raises(ValidationError):
        PipelineConfig(**fields)


def test_a_suite_too_small_for_the_split_is_a_clear_error():
    tasks = load_suite("easy", "train")[:3]
    with pytest.raises(SystemExit, match="no train task is left for RL"):
        split_train_tasks(tasks, PipelineConfig(train_tasks=0, sft_tasks=5, rl_tasks="unseen"))
