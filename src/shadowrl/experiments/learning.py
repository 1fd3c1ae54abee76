"""The users' outcomes, recorded and counted against the planted preference.

Every simulated user's outcome (task, tests passed, changed lines, turns, tokens, what
they said) is appended to `realtime/users.jsonl`, so the planted preference's bite
(passing work rejected for its size or its length) is counted over every session of
every cycle (`measure.py` per cycle, `trend.py` over the run).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from shadowrl.experiments.preference import MEASURES, Preference, Work
from shadowrl.experiments.users import UserOutcome

OUTCOMES = "users.jsonl"


def jsonl_appender(path: Path) -> Callable[[Any], None]:
    """Appends each dataclass it is given to `path` as one JSON line; callers may be threads."""
    lock = threading.Lock()

    def append(row: Any) -> None:
        line = json.dumps(dataclasses.asdict(row)) + "\n"
        with lock, path.open("a") as f:
            f.write(line)

    return append


def outcome_recorder(root: Path) -> Callable[[UserOutcome], None]:
    """Append each finished user's outcome to `root/users.jsonl` (a rerun may repeat one)."""
    return jsonl_appender(root / OUTCOMES)


def read_outcomes(root: Path) -> dict[str, dict[str, Any]]:
    """The last recorded outcome of each session id."""
    path = root / OUTCOMES
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["session_id"]: r for r in rows}


def work_of(outcome: dict[str, Any]) -> Work:
    """What the user judged in a recorded outcome (rows logged before turns and tokens
    were recorded read 0 for them)."""
    o = outcome
    return Work(bool(o["resolved"]), o["diff_lines"], o.get("turns", 0), o.get("tokens", 0))


def preference_counts(
    outcomes: dict[str, dict[str, Any]], session_ids: Sequence[str], pref: Preference
) -> dict[str, int]:
    """Over these sessions: how many had an outcome, passed, and were rejected only for the
    preference (in all, and per limit broken: `over_diff_lines`, `over_turns`, ...)."""
    seen = [outcomes[i] for i in session_ids if i in outcomes]
    work = [work_of(o) for o in seen]
    bitten = [pref.broken(w) for w in work if pref.rejects_passing(w)]
    return {
        "sessions": len(seen),
        "resolved": sum(w.resolved for w in work),
        "rejected_by_preference": len(bitten),
        **{f"over_{m}": sum(m in b for b in bitten) for m in MEASURES},
    }
