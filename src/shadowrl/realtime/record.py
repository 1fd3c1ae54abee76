"""One line of `realtime/cycles.jsonl`, typed: what a finished cycle did, as the report,
the metrics and a resumed run read it.

`cycle.cycle_row` builds a `CycleRow`; `to_json` writes it (the keys and values rows
have always had, so old run directories still load) and `from_json` reads one back
into the same type, so a renamed field fails at type-check time or, for a row on disk
that lacks it, at load with an error naming it, never silently in the report. A
measurement's fields (`context.Measurement`) are its own typed record, `measured`,
written flat after the cycle's fields and read back by the type the measurement names.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import TypeAdapter, ValidationError

from shadowrl.eval import RateTest
from shadowrl.realtime.checks import WatchResult
from shadowrl.realtime.rows import RowCounts


class MeasuredRow(Protocol):
    """A measurement's fields of a row (`context.Measurement.row`)."""

    def to_json(self) -> dict[str, Any]:
        """Its keys of the JSON line, in the order they are written."""


M = TypeVar("M", bound=MeasuredRow)


@dataclass(frozen=True)
class MixCounts:
    """The rollouts mixed in on pinned train tasks (`realtime.mix`): the train stage's
    counts, recorded in the row as they are."""

    tasks: tuple[str, ...]
    groups: int
    episodes: int
    spoiled: int


@dataclass(frozen=True)
class BranchRow:
    """The branching stage's counts (`context.BranchStats`); the counts added later are
    None in a row written before them (unknown, not 0)."""

    negative: int
    points: int
    faithful: int
    unfaithful: int
    unjudged: int
    continuations: int
    groups: int
    with_contrast: int
    no_point_why: dict[str, int] = field(default_factory=dict)
    unfaithful_why: dict[str, int] = field(default_factory=dict)
    unjudged_why: dict[str, int] = field(default_factory=dict)
    unlabeled: int | None = None
    recorded: int | None = None
    recorded_why: dict[str, int] | None = None
    generated: int | None = None


@dataclass(frozen=True)
class CycleRow(Generic[M]):
    """One finished cycle (the issue's fields first, then the details)."""

    cycle: int
    deployed_before: str  # the checkpoint that served the cycle's sessions
    candidate: str | None  # None: no candidate trained
    sessions: int
    with_feedback: int
    reward_mean: float | None
    accept_rate: float | None
    collect_s: float
    train_s: float  # reward and train stages
    eval_s: float
    gate: str | None  # "promote", "reject"; None: no candidate
    deployed_after: str
    cycle_s: float
    gate_s: float
    deploy_s: float
    watch_s: float
    caught_by: str | None
    reason: str
    rolled_back: bool
    watch: WatchResult | None
    rows: RowCounts
    mix: MixCounts
    branching: BranchRow | None  # None: branching off
    kl: float | None
    clarifying_rate: float | None
    broken_rate: float | None
    no_edit_rate: float | None
    min_detectable_drop: float | None
    alarm_tests: dict[str, RateTest] | None  # counts and Fisher p of each rate alarm
    train_tokens: int | None
    measured: M | None = None  # the measurement's fields, written after these

    def seconds(self) -> dict[str, float]:
        """Each stage's time (`*_s` fields but the cycle's), with the measurement's."""
        extra = {} if self.measured is None else self.measured.to_json()
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {
            k.removesuffix("_s"): float(v or 0.0)
            for k, v in (own | extra).items()
            if k.endswith("_s") and k != "cycle_s"
        }


CORE: TypeAdapter[CycleRow[Any]] = TypeAdapter(CycleRow[Any])
FIELDS = tuple(f.name for f in dataclasses.fields(CycleRow) if f.name != "measured")


def to_json(row: CycleRow[Any]) -> str:
    """The row as its `cycles.jsonl` line (no newline)."""
    own = {k: _plain(getattr(row, k)) for k in FIELDS}
    return json.dumps(own if row.measured is None else own | row.measured.to_json())


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return {k: _plain(v) for k, v in value.items()} if isinstance(value, dict) else value


def from_json(line: str, measured: type[M] | None = None) -> CycleRow[M]:
    """The row of a `cycles.jsonl` line; `measured` reads a measurement's fields (a row
    without any of them has none). Raises `ValueError` naming the fields missing or wrong."""
    obj = json.loads(line)
    try:
        row: CycleRow[M] = CORE.validate_python({k: v for k, v in obj.items() if k in FIELDS})
        if measured is None:
            return row
        names = {f.name for f in dataclasses.fields(measured)}  # type: ignore[arg-type]
        if not names & set(obj):
            return row
        extra = TypeAdapter(measured).validate_python({k: obj[k] for k in names if k in obj})
    except ValidationError as e:
        raise ValueError(f"a cycles.jsonl row of cycle {obj.get('cycle')}: {e}") from e
    return dataclasses.replace(row, measured=extra)


def read_cycles(root: Path, measured: type[M] | None = None) -> list[CycleRow[M]]:
    """Every row of `root/cycles.jsonl` (none without the file)."""
    path = root / "cycles.jsonl"
    if not path.exists():
        return []
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return [from_json(line, measured) for line in lines]


def jsonable(row: CycleRow[Any]) -> Mapping[str, Any]:
    """The row's JSON object (for the run's metrics)."""
    out: Mapping[str, Any] = json.loads(to_json(row))
    return out
