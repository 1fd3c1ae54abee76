"""Run metrics: one JSONL line per record plus TensorBoard scalars.

JSONL is the source of truth (reports and `--resume` read it back); TensorBoard is
for watching a run live. Records are appended and flushed at once, so a crash loses
nothing that was logged.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class MetricsLogger:
    """Append-only metrics sink for one run directory."""

    def __init__(self, run_dir: str | Path, *, tensorboard: bool = True) -> None:
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        self._file = self.path.open("a", buffering=1)
        self._tb: Any = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(self.dir / "tb"))
            except Exception:  # tensorboard is optional at run time
                self._tb = None

    def log(self, kind: str, step: int, values: Mapping[str, Any]) -> None:
        """Write one record; numeric values also go to TensorBoard as `kind/name`."""
        record = {**values, "kind": kind, "step": step, "time": time.time()}
        self._file.write(json.dumps(record, default=_jsonable) + "\n")
        if self._tb is not None:
            for key, value in values.items():
                if isinstance(value, int | float) and math.isfinite(value):
                    self._tb.add_scalar(f"{kind}/{key}", value, step)

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()

    def __enter__(self) -> MetricsLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_metrics(path: str | Path, kind: str | None = None) -> list[dict[str, Any]]:
    """Read back a metrics.jsonl, skipping a torn last line left by a crash."""
    out: list[dict[str, Any]] = []
    p = Path(path)
    if not p.exists():
        return out
    for line in p.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if kind is None or record.get("kind") == kind:
            out.append(record)
    return out


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)
