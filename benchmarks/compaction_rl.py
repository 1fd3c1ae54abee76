"""`compaction.py --quick` without `--learned`: a short RL run, so the learned arm exists.

From `--model`, asynchronous GRPO on the first `TASKS` `long:train` tasks under
`configs/summarize-cpu.yaml` (summary trigger on, summary tokens trained like any other
generated token under the chain's reward), `steps` steps of one group of `GROUP`
episodes, through the same `rl_stage` as `shadowrl train`. The run directory is
temporary (checkpoints of SmolLM2 are ~2 GB with the optimizer); the trained policy
comes back in memory. A few steps cannot teach SmolLM2 much: this makes `--quick`'s
learned arm a real RL'd policy, not a measured improvement (that is the documented run's
job, `--learned runs/summarize-cpu/checkpoints/...`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

TASKS = 4  # long:train tasks the short run cycles through
GROUP = 4  # episodes per group: the advantage is centred over these


def short_rl(config_path: Path, model_path: str, steps: int) -> Any:
    """The policy after `steps` RL steps from `model_path` (an HF model in memory)."""
    from shadowrl.commands.config import load_config, train_run
    from shadowrl.models import load_model
    from shadowrl.pipeline.stages import rl_stage

    with tempfile.TemporaryDirectory(prefix="compaction-rl-") as run_dir:
        config = load_config(
            [config_path],
            [
                f"--run_dir={run_dir}",
                f"--model.path={model_path}",
                f"--train.steps={steps}",
                f"--train.group_size={GROUP}",
                "--train.groups_per_step=1",
                f"--train.save_every={steps}",
                f"--pipeline.train_tasks={TASKS}",
                "--orchestrator.inflight_groups=1",
            ],
        )
        model, tokenizer = load_model(config.model)
        print(f"short RL: {steps} steps x {GROUP} episodes on {TASKS} long:train tasks")
        return rl_stage(model, tokenizer, train_run(config))
