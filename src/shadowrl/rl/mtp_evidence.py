"""What the MTP draft heads add to the deploy gate and to a run report, built by
`contributions.py` (the core sees them only through it).

The gate: broken heads would make the engine's speculation stop paying, and the paired
pass-rate test cannot see them. So the real-time loop scores the heads' greedy acceptance
per draft position on the candidate's own training batch (`mtp_rl.acceptance`), the
parent's heads under the parent before the step and the re-distilled heads under the
candidate after it; the largest drop over positions above
`realtime.max_mtp_acceptance_drop` is the alarm `mtp_acceptance_drop`.

The report: per RL step, the acceptance the trainer logged before re-distilling
(`mtp_accept_j`, `mtp_overlap_j`) and what the engine's speculation accepted (`spec_*`).

The heads' code (`mtp_rl.py`) is imported only when a check measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from shadowrl.markdown import table
from shadowrl.rl.companion import Moved
from shadowrl.rl.mtp_config import RLDistillConfig

if TYPE_CHECKING:
    from shadowrl.rl.batch import TrainBatch
    from shadowrl.rl.companion import Companion

ALARM = "mtp_acceptance_drop"


class Limits(Protocol):
    """The settings the heads' gate limit is read from (`realtime`, `RealtimeConfig`)."""

    @property
    def max_mtp_acceptance_drop(self) -> float: ...


@dataclass(frozen=True)
class HeadsAcceptance:
    """The heads' greedy acceptance per draft position: a `StepCheck`."""

    cfg: RLDistillConfig
    limit: float
    alarm: str = ALARM

    def measure(self, model: Any, companion: Companion, batch: TrainBatch) -> list[float]:
        from shadowrl.rl.mtp_rl import acceptance

        return acceptance(model, companion.served(), batch, self.cfg)

    def compare(self, parent: Sequence[float], candidate: Sequence[float]) -> Moved:
        drop = max((p - c for p, c in zip(parent, candidate, strict=True)), default=0.0)
        return Moved("mtp", self.alarm, drop, self.limit, tuple(parent), tuple(candidate))


def heads_check(cfg: RLDistillConfig, limits: Limits) -> HeadsAcceptance | None:
    """The check when the heads are re-distilled during training (`train.mtp.every`);
    it measures only where the trainer has heads (a `Companion`)."""
    return None if cfg.every == 0 else HeadsAcceptance(cfg, limits.max_mtp_acceptance_drop)


def heads_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per RL step with MTP heads: their acceptance per draft position on the step's own
    tokens before re-distilling (`mtp_rl.py`), and what the engine's speculation accepted."""
    scored = [r for r in rows if "mtp_accept_1" in r or "spec_tau" in r]
    if not scored:
        return []
    k = max(
        int(key.rsplit("_", 1)[1]) for r in scored for key in r if key.startswith("mtp_accept_")
    )
    cols = [f"mtp_accept_{j}" for j in range(1, k + 1)] + [
        f"mtp_overlap_{j}" for j in range(1, k + 1)
    ]
    cols += ["spec_tau"] + [f"spec_accept_{j}" for j in range(1, k + 1)]
    lines = [
        "MTP draft heads: greedy acceptance (`mtp_accept_j`: positions 1..j agree) and T=1 "
        "overlap per draft position on each step's own tokens, teacher-forced, before the "
        "heads re-distil on them; `spec_*`: what the engine's speculative steps accepted.",
        "",
    ]
    cells = [
        [
            int(r["step"]),
            *(f"{r[c]:.3f}" if isinstance(r.get(c), int | float) else "" for c in cols),
        ]
        for r in scored
    ]
    return [*lines, *table(["step", *(c.replace("_", " ") for c in cols)], cells), ""]
