"""The RL trainer and its runs: async GRPO (`run.py`), SFT (`sft.py`), checkpoints.

The loss is `loss.py`, the trainer that applies it `trainer.py`; `run.py` drives rollouts,
the orchestrator and the trainer for `shadowrl train`'s RL stage. Other packages import
from here, never from its modules, except the Ray services (`rl.cluster`, their own
entry). Names are imported on first use (`shadowrl.lazy`), so loading the config tree,
which reads `rl.config`, imports no torch.
"""

from typing import TYPE_CHECKING

from shadowrl.lazy import exports

if TYPE_CHECKING:
    from shadowrl.rl.batch import TrainBatch as TrainBatch
    from shadowrl.rl.batch import build_rl_batch as build_rl_batch
    from shadowrl.rl.checkpoint import latest_checkpoint as latest_checkpoint
    from shadowrl.rl.companion import Companion as Companion
    from shadowrl.rl.companion import Moved as Moved
    from shadowrl.rl.companion import StepCheck as StepCheck
    from shadowrl.rl.companion import build_companion as build_companion
    from shadowrl.rl.contributions import build_step_checks as build_step_checks
    from shadowrl.rl.contributions import report_sections as report_sections
    from shadowrl.rl.credit_tree import Leaves as Leaves
    from shadowrl.rl.credit_tree import Subtree as Subtree
    from shadowrl.rl.demos import append_trajectories as append_trajectories
    from shadowrl.rl.demos import dedupe as dedupe
    from shadowrl.rl.demos import expert_demonstrations as expert_demonstrations
    from shadowrl.rl.demos import load_trajectories as load_trajectories
    from shadowrl.rl.demos import trajectory_to_json as trajectory_to_json
    from shadowrl.rl.forward import decoder_hidden as decoder_hidden
    from shadowrl.rl.forward import token_logprobs as token_logprobs
    from shadowrl.rl.fsdp import export_checkpoint as export_checkpoint
    from shadowrl.rl.fsdp import is_sharded as is_sharded
    from shadowrl.rl.fsdp import policy_of as policy_of
    from shadowrl.rl.lora_sync import AdapterSync as AdapterSync
    from shadowrl.rl.mtp_config import DistillConfig as DistillConfig
    from shadowrl.rl.mtp_distill import self_distill as self_distill
    from shadowrl.rl.orchestrator import OrchestratorConfig as OrchestratorConfig
    from shadowrl.rl.orchestrator import TaskSource as TaskSource
    from shadowrl.rl.rollout import rollout_group as rollout_group
    from shadowrl.rl.run import run_rl as run_rl
    from shadowrl.rl.sft import Check as Check
    from shadowrl.rl.sft import DemoScore as DemoScore
    from shadowrl.rl.sft import SFTRun as SFTRun
    from shadowrl.rl.sft import Validation as Validation
    from shadowrl.rl.sft import demo_scores as demo_scores
    from shadowrl.rl.sft import run_sft as run_sft
    from shadowrl.rl.trainer import Trainer as Trainer
    from shadowrl.rl.weights import WeightStore as WeightStore

_WHERE = {
    "TrainBatch": "batch",
    "build_rl_batch": "batch",
    "latest_checkpoint": "checkpoint",
    "Companion": "companion",
    "Moved": "companion",
    "StepCheck": "companion",
    "build_companion": "companion",
    "build_step_checks": "contributions",
    "report_sections": "contributions",
    "Leaves": "credit_tree",
    "Subtree": "credit_tree",
    "append_trajectories": "demos",
    "dedupe": "demos",
    "expert_demonstrations": "demos",
    "load_trajectories": "demos",
    "trajectory_to_json": "demos",
    "decoder_hidden": "forward",
    "token_logprobs": "forward",
    "export_checkpoint": "fsdp",
    "is_sharded": "fsdp",
    "policy_of": "fsdp",
    "AdapterSync": "lora_sync",
    "DistillConfig": "mtp_config",
    "self_distill": "mtp_distill",
    "OrchestratorConfig": "orchestrator",
    "TaskSource": "orchestrator",
    "rollout_group": "rollout",
    "run_rl": "run",
    "Check": "sft",
    "DemoScore": "sft",
    "SFTRun": "sft",
    "Validation": "sft",
    "demo_scores": "sft",
    "run_sft": "sft",
    "Trainer": "trainer",
    "WeightStore": "weights",
}
if not TYPE_CHECKING:
    __getattr__ = exports(__name__, _WHERE)
