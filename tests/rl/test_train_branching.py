"""`shadowrl train` with tree rollouts (tiny random model, real tasks and sandboxes):
configs/branching-cpu.yaml parses, and one RL step of trees trains end to end."""

from pathlib import Path

from shadowrl.commands.config import load_config
from shadowrl.commands.main import main
from shadowrl.metrics import read_metrics

CONFIG = Path(__file__).parents[2] / "configs" / "branching-cpu.yaml"


def test_branching_config_parses() -> None:
    b = load_config([str(CONFIG)]).train.branching
    assert (b.enabled, b.roots, b.branches, b.rule) == (True, 2, 3, "first_edit")


def test_train_with_tree_rollouts_end_to_end(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = [
        "train", f"--config={CONFIG}", f"--run_dir={run}", "--model.path=tiny",
        "--pipeline.sft=false", "--pipeline.train_tasks=2", "--pipeline.eval_tasks=1",
        "--pipeline.eval_samples=1", "--train.steps=1", "--train.groups_per_step=1",
        "--train.branching.rule=turn", "--train.branching.turn=1",  # a random model never edits
        "--train.branching.branches=2", "--agent.max_turns=2", "--agent.max_new_tokens=32",
        "--orchestrator.inflight_groups=1",
    ]  # fmt: skip
    assert main(args) == 0
    (step,) = read_metrics(run / "metrics.jsonl", kind="rl")
    # 2 subtrees x (one prefix row + 2 branch rows); the budget counts the prefix once:
    # 2 x (32 + 2 x 32) tokens, where the leaves generated 2 x 2 x (32 + 32)
    assert step["groups"] == 1.0 and step["segments"] == 6.0
    assert step["token_budget"] == 192.0 and step["gen_tokens"] == 256
