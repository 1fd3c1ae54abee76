"""The learning measurement's fields of a `cycles.jsonl` row, typed (`realtime.record`:
`CycleRow.measured`): the panel's replays and comparisons, the planted preference's
counts and the control arm. Written flat after the cycle's own fields, with the keys
and values rows have always had; read back into these types by `record.from_json`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from shadowrl.eval.stats import PairedDifference, SignTest
from shadowrl.experiments.panel import PanelScore
from shadowrl.realtime import ArmResult, RowCounts


@dataclass(frozen=True)
class PreferenceCounts:
    """A cycle's sessions with an outcome, those passing, and those rejected only for the
    planted preference, in all and per limit broken (`learning.preference_counts`); the
    per-limit counts are None in a row written before them (unknown, not 0)."""

    sessions: int
    resolved: int
    rejected_by_preference: int
    over_diff_lines: int | None = None
    over_turns: int | None = None
    over_tokens: int | None = None


@dataclass(frozen=True)
class ScoreRow:
    """A `panel.PanelScore` with its accept rate, as a comparison records it."""

    episodes: int
    accepted: int
    resolved: int
    rejected_by_preference: int
    accept_rate: float


@dataclass(frozen=True)
class ComparisonRow:
    """`panel.Comparison.to_json`: arm a − arm b on the panel."""

    a: ScoreRow
    b: ScoreRow
    delta: PairedDifference
    sign: SignTest
    tasks: int
    confidence: float


@dataclass(frozen=True)
class PanelRow:
    """Each arm's replay scored, and the arms compared in pairs (those made)."""

    scores: dict[str, PanelScore]
    candidate_vs_deployed: ComparisonRow | None = None
    candidate_vs_control: ComparisonRow | None = None
    control_vs_deployed: ComparisonRow | None = None

    def pairs(self) -> dict[str, ComparisonRow]:
        """The comparisons made, by pair name ("candidate_vs_control", ...)."""
        made = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)[1:]}
        return {k: c for k, c in made.items() if c is not None}

    def to_json(self) -> dict[str, Any]:
        scores = {k: dataclasses.asdict(s) for k, s in self.scores.items()}
        return {"scores": scores, **{k: dataclasses.asdict(c) for k, c in self.pairs().items()}}


@dataclass(frozen=True)
class CheckFigures:
    """A check's figures under the parent and the candidate (`companion.Moved`)."""

    parent: list[float]
    candidate: list[float]


@dataclass(frozen=True)
class ArmRow:
    """`training.ArmResult.to_json`: a trained arm, or why there is none."""

    rows: RowCounts
    parent: str
    candidate: str | None
    reason: str | None = None  # only without a candidate
    mtp: CheckFigures | None = None  # the MTP heads' check, where the parent has them
    version: int | None = None
    kl: float | None = None
    metrics: dict[str, float] | None = None
    tokens: int | None = None
    steps: int | None = None

    @classmethod
    def of(cls, arm: ArmResult) -> ArmRow:
        return ARM.validate_python(arm.to_json())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rows": dataclasses.asdict(self.rows), "parent": self.parent}
        if self.candidate is None:
            return out | {"candidate": None, "reason": self.reason}
        if self.mtp is not None:
            out["mtp"] = dataclasses.asdict(self.mtp)
        return out | {
            "candidate": self.candidate, "version": self.version, "kl": self.kl,
            "metrics": self.metrics, "tokens": self.tokens, "steps": self.steps,
        }  # fmt: skip


ARM = TypeAdapter(ArmRow)
PANEL = TypeAdapter(PanelRow)


@dataclass(frozen=True)
class LearningRow:
    """The measurement's fields of one cycle's row (None: not measured)."""

    panel_s: float  # the `measure` stage's time
    panel: PanelRow | None = None
    preference: PreferenceCounts | None = None
    control: ArmRow | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "panel_s": self.panel_s,
            "panel": None if self.panel is None else self.panel.to_json(),
            "preference": None if self.preference is None else dataclasses.asdict(self.preference),
            "control": None if self.control is None else self.control.to_json(),
        }
