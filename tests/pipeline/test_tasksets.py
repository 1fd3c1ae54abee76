"""Which tasks each role of `shadowrl train` gets (train, dev, held-out), on the easy suite."""

import pytest

from shadowrl.commands.config import load_config, train_run
from shadowrl.pipeline.config import PipelineError
from shadowrl.pipeline.tasksets import dev_tasks, heldout_tasks, load_spec, rl_share, train_tasks
from shadowrl.tasks import load_suite
from shadowrl.tasks.task import save_tasks

EASY = ["--pipeline.train_suite=", "--pipeline.eval_suite=", "--pipeline.dev_suite="]


def _run(tmp_path, *overrides):
    return train_run(load_config(overrides=[*EASY, f"--run_dir={tmp_path}", *overrides]))


def _ids(tasks):
    return [t.instance_id for t in tasks]


def test_a_spec_names_a_split_or_the_whole_suite():
    assert _ids(load_spec("easy:heldout")) == _ids(load_suite("easy", "heldout"))
    assert _ids(load_spec("easy")) == _ids(load_suite("easy"))


def test_dev_tasks_without_a_dev_suite_leave_the_train_pool(tmp_path):
    run = _run(tmp_path, "--pipeline.sft_dev_tasks=3", "--pipeline.sft_tasks=4")
    train = load_suite("easy", "train")
    assert _ids(dev_tasks(run)) == _ids(train[-3:])
    assert _ids(train_tasks(run)) == _ids(train[:-3])  # no stage trains on a dev task
    assert _ids(rl_share(run)) == _ids(train[4:-3])  # RL: the ones SFT never saw


def test_the_roles_read_their_own_suites(tmp_path):
    run = _run(
        tmp_path, "--pipeline.train_suite=easy:heldout", "--pipeline.eval_suite=easy:train",
        "--pipeline.dev_suite=easy:heldout", "--pipeline.sft_dev_tasks=2", "--pipeline.eval_tasks=5",
    )  # fmt: skip
    held, train = load_suite("easy", "heldout"), load_suite("easy", "train")
    assert _ids(train_tasks(run)) == _ids(held)  # a dev suite of its own takes nothing away
    assert _ids(dev_tasks(run)) == _ids(held[:2])
    assert _ids(heldout_tasks(run)) == _ids(train[:5])


def test_an_empty_eval_suite_is_a_clear_error(tmp_path):
    only_train = tmp_path / "train_only.jsonl"
    save_tasks(load_suite("easy", "train")[:2], only_train)
    run = _run(tmp_path, f"--pipeline.eval_suite={only_train}:heldout")
    with pytest.raises(PipelineError, match="no tasks to evaluate on"):
        heldout_tasks(run)
