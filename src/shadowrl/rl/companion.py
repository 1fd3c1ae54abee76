"""A model trained beside the policy and never into it: the trainer's one seam for it.

The trainer knows only the `Companion` Protocol: after each applied policy update it
hands over the step's batch, the companion's tensors join the policy's published state
(so every weight delta carries them to the engines, under the same version) and its
files join each checkpoint. `build_companion` makes it once from `train:`; when there
is none the trainer holds None, and nothing of it is imported.

A companion may also be checked across a candidate's training (`StepCheck`, built by
`contributions.build_step_checks`): a figure of it under the parent before the step and
under the candidate after, whose fall the deploy gate alarms on (`Moved`).

The one companion today is the MTP draft heads the engine speculates with
(`train.mtp`, `rl/mtp_rl.py`): re-distilled on each step's own rollout tokens; their
check and report table are `rl/mtp_evidence.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from shadowrl.inference import heads_beside
from shadowrl.rl.config import TrainConfig
from shadowrl.seeds import stream_seed

if TYPE_CHECKING:
    from torch import Tensor

    from shadowrl.rl.batch import TrainBatch


class Companion(Protocol):
    """Trained from the policy's batches after its updates; detached from the policy."""

    def after_update(self, model: Any, batch: TrainBatch, updates: int) -> dict[str, float]:
        """Learn from `batch` under the updated `model` (its `updates`-th update); the
        metrics join the step's ({} when it is not due this time)."""
        ...

    def state_dict(self) -> dict[str, Tensor]:
        """Its tensors under the names engines load them by, published with the policy's."""
        ...

    def save(self, directory: Path) -> None:
        """Write its files into a checkpoint directory before it is committed."""
        ...

    def served(self) -> Any:
        """What an engine is built with beside the policy (`build_engine(heads=)`)."""
        ...

    def peer(self) -> Companion:
        """What ranks 1..N-1 of a sharded trainer hold in its place (sent to them once, so
        picklable): its reads of the policy are collectives under FSDP, which they join."""
        ...


@dataclass(frozen=True)
class Moved:
    """A check's figures (higher is better) under the parent and under the candidate, on
    the batch the candidate trained on, and the gate alarm they make."""

    key: str  # its field of the arm in `cycles.jsonl`
    alarm: str  # the gate's alarm
    value: float  # how far the figures fell, parent to candidate
    limit: float  # the alarm fires above it (or on NaN)
    parent: tuple[float, ...]
    candidate: tuple[float, ...]


class StepCheck(Protocol):
    """A check of a companion across a candidate's training step, built once from config."""

    @property
    def alarm(self) -> str:
        """The name of the gate alarm it makes (listed as unchecked where no training ran)."""
        ...

    def measure(self, model: Any, companion: Companion, batch: TrainBatch) -> Sequence[float]:
        """Its figures of `companion` under `model` on `batch`."""
        ...

    def compare(self, parent: Sequence[float], candidate: Sequence[float]) -> Moved:
        """What moved from the parent's figures to the candidate's."""
        ...


def build_companion(
    train: TrainConfig,
    checkpoint: str | Path | None = None,
    *,
    heads: Any = None,
    resumed: bool = False,
    seed: int = 0,
) -> Companion | None:
    """The MTP heads' re-distillation (`train.mtp`; `rl/mtp_rl.py`, imported only then)
    over `heads`, else the heads `train.mtp.heads` names or saved beside `checkpoint`
    (first, when `resumed`: the run's own); None when there are none or `train.mtp.every`
    is 0. `seed`: the run seed, whose "heads" stream (`seeds.py`) samples the
    re-distillation's windows."""
    mtp = train.mtp
    if mtp.every == 0 or (heads is None and not mtp.heads and not heads_beside(checkpoint)):
        return None
    from shadowrl.rl.mtp_rl import HeadsTrainer, starting_heads

    heads = heads if heads is not None else starting_heads(mtp, checkpoint, resumed=resumed)
    if heads is None:
        return None
    return HeadsTrainer(heads, mtp, stream_seed(seed, "heads"))
