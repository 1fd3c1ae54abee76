"""Which train tasks SFT and RL see (`pipeline.sft_tasks`, `pipeline.rl_tasks`)."""

import pytest
from pydantic import ValidationError

from shadowrl.pipeline.config import PipelineConfig, PipelineError
from shadowrl.pipeline.tasksets import split_train_tasks
from shadowrl.tasks import load_suite

EASY = ["--pipeline.train_suite=", "--pipeline.sft_dev_tasks=0"]  # the easy suite's train split


def _ids(tasks):
    return [t.instance_id for t in tasks]


def test_unseen_gives_rl_only_the_tasks_sft_had_no_demo_of():
    tasks = load_suite("easy", "train")[:10]
    sft, rl = split_train_tasks(tasks, PipelineConfig(sft_tasks=4, rl_tasks="unseen"))
    assert _ids(sft) == _ids(tasks[:4]) and _ids(rl) == _ids(tasks[4:])


def test_all_gives_rl_every_task_whatever_sft_saw():
    tasks = load_suite("easy", "train")[:10]
    sft, rl = split_train_tasks(tasks, PipelineConfig(sft_tasks=4, rl_tasks="all"))
    assert _ids(sft) == _ids(tasks[:4]) and _ids(rl) == _ids(tasks)
    sft, rl = split_train_tasks(tasks, PipelineConfig(sft_tasks=0, rl_tasks="all"))
    assert _ids(sft) == _ids(rl) == _ids(tasks)  # SFT on all of them, RL on all of them


def test_without_sft_every_task_is_unseen():
    tasks = load_suite("easy", "train")[:10]
    sft, rl = split_train_tasks(tasks, PipelineConfig(sft=False))  # rl_tasks: unseen
    assert sft == [] and _ids(rl) == _ids(tasks)


@pytest.mark.parametrize(
    "fields",
    [
        {"rl_tasks": "unseen", "sft_tasks": 0},  # SFT on all tasks leaves none unseen
        {"rl_tasks": "unseen", "sft_tasks": 8, "train_tasks": 8},
        {"sft_more": True, "rl_tasks": "all"},  # its demos would not be fresh
        {"sft_more": True, "sft": False},  # nothing to continue
    ],
)
def test_a_split_that_leaves_rl_nothing_is_refused_at_config_time(fields):
    with pytest.raises(ValidationError):
        PipelineConfig(**fields)


def test_a_suite_too_small_for_the_split_is_a_clear_error():
    tasks = load_suite("easy", "train")[:3]
    with pytest.raises(PipelineError, match="no train task is left for RL"):
        split_train_tasks(tasks, PipelineConfig(train_tasks=0, sft_tasks=5, rl_tasks="unseen"))


def _screen(tasks, outcomes):
    """A real eval result of `tasks` whose task i resolved the samples in outcomes[i]."""
    from shadowrl.eval.behaviour import summarize_behaviour
    from shadowrl.eval.result import EvalResult, Pins, SampleResult, TaskResult, score

    results = [
        TaskResult(
            instance_id=t.instance_id,
            tier=t.tier,
            samples=[
                SampleResult(sample=j, resolved=r, reward=float(r), end="submitted")
                for j, r in enumerate(row)
            ],
        )
        for t, row in zip(tasks, outcomes, strict=True)
    ]
    pins = Pins(
        suite="easy:train",
        suite_hash="h",
        harness_version="v",
        config_digest="c",
        config_sections={},
        policy="sft",
    )
    return EvalResult(
        pins=pins,
        samples=len(outcomes[0]),
        tasks=results,
        overall=score(results, resamples=10),
        by_tier={},
        behaviour=summarize_behaviour([], []),
        wall_s=1.0,
        created="2026-01-01T00:00:00",
    )


def test_the_screen_keeps_tasks_solved_sometimes_but_not_always(tmp_path):
    from shadowrl.commands.config import load_config, train_run
    from shadowrl.pipeline.stages import SCREEN_DIR, learnable, rl_task_list

    overrides = ["--pipeline.train_tasks=6", "--pipeline.sft_tasks=2", "--pipeline.rl_tasks=unseen",
                 *EASY]  # fmt: skip
    config = load_config(
        overrides=[*overrides, "--pipeline.screen_samples=3", f"--run_dir={tmp_path}"]
    )
    rl = load_suite("easy", "train")[2:6]
    outcomes = [[False] * 3, [True, False, False], [True] * 3, [False, True, True]]
    (tmp_path / SCREEN_DIR).mkdir()
    _screen(rl, outcomes).save(tmp_path / SCREEN_DIR / "eval.json")
    assert _ids(rl_task_list(train_run(config))) == _ids([rl[1], rl[3]])
    assert _ids(learnable(rl[:2], _screen(rl, outcomes))) == _ids([rl[1]])
    # without a screen RL gets the split's whole share, and no screen file is read
    unscreened = load_config(overrides=[*overrides, f"--run_dir={tmp_path / 'none'}"])
    assert _ids(rl_task_list(train_run(unscreened))) == _ids(rl)


def test_a_screen_that_keeps_nothing_is_a_clear_error(tmp_path):
    from shadowrl.commands.config import load_config, train_run
    from shadowrl.pipeline.stages import SCREEN_DIR, rl_task_list

    overrides = ["--pipeline.train_tasks=2", "--pipeline.screen_samples=2", f"--run_dir={tmp_path}",
                 "--pipeline.sft_tasks=0", "--pipeline.rl_tasks=all", *EASY]  # fmt: skip
    config = load_config(overrides=overrides)
    (tmp_path / SCREEN_DIR).mkdir()
    _screen(load_suite("easy", "train")[:2], [[False, False], [True, True]]).save(
        tmp_path / SCREEN_DIR / "eval.json"
    )
    with pytest.raises(PipelineError, match="sometimes but not always"):
        rl_task_list(train_run(config))


def _crashed(result, first_n):
    """`result` with the first `first_n` samples of each task turned into crashes."""
    from shadowrl.eval.result import SampleResult, score

    for task in result.tasks:
        for j in range(first_n):
            task.samples[j] = SampleResult(
                sample=j, resolved=False, reward=0.0, end="crash", error=f"OSError: seed {j}"
            )
    return result.model_copy(update={"overall": score(result.tasks)})


def test_an_eval_where_every_episode_crashed_stops_the_run_and_is_not_reused(tmp_path):
    from shadowrl.pipeline.stages import keep_eval

    tasks = load_suite("easy", "heldout")[:2]
    broken = _crashed(_screen(tasks, [[True, False], [False, False]]), 2)
    with pytest.raises(RuntimeError, match=r"all 4 episodes crashed(.|\n)*OSError: seed 0"):
        keep_eval(broken, tmp_path / "eval_sft", "sft")
    assert not (tmp_path / "eval_sft").exists()  # a rerun evaluates again
    assert (tmp_path / "eval_sft.crashed" / "eval.json").exists()  # the evidence is kept
    # some crashes are recorded and counted as unresolved; the eval is kept
    partly = _crashed(_screen(tasks, [[True, True], [False, True]]), 1)
    keep_eval(partly, tmp_path / "eval_sft", "sft")
    assert (tmp_path / "eval_sft" / "eval.json").exists() and partly.overall.errors == 2


def test_a_stream_run_may_give_sft_the_whole_suite():
    """RL draws from the family stream, so no share of the list is left for it; SFT-more
    takes its demos from that share, so it still needs one."""
    tasks = load_suite("easy", "train")[:3]
    sft, rl = split_train_tasks(tasks, PipelineConfig(sft_tasks=3, rl_stream=True))
    assert [t.instance_id for t in sft] == [t.instance_id for t in tasks] and rl == []
    PipelineConfig(rl_stream=True, sft_tasks=0)  # SFT on the whole list: fine with a stream
    with pytest.raises(PipelineError, match="no train task is left for RL"):
        split_train_tasks(tasks, PipelineConfig(sft_tasks=3, rl_stream=True, sft_more=True))
