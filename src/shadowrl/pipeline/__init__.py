"""The training pipeline behind `shadowrl train`: SFT, eval, screen, RL, eval, report.

It sits above `rl` and `eval` (it uses both) and below `commands`, which builds its
`TrainRun` from the config tree. Other packages import from here, never from its
modules; names are imported on first use (`shadowrl.lazy`), so loading the config tree,
which reads `pipeline.config`, imports no torch.
"""

from typing import TYPE_CHECKING

from shadowrl.lazy import exports

if TYPE_CHECKING:
    from shadowrl.pipeline.evaluator import ray_evaluator as ray_evaluator
    from shadowrl.pipeline.stages import train_pipeline as train_pipeline
    from shadowrl.pipeline.stages import warm_start as warm_start

_WHERE = {
    "ray_evaluator": "evaluator",
    "train_pipeline": "stages",
    "warm_start": "stages",
}
if not TYPE_CHECKING:
    __getattr__ = exports(__name__, _WHERE)
