"""The feedback signals, listed once: what `POST /v1/feedback` accepts, what the trace
store's `feedback.signal` column holds (those, plus `silent` for no feedback within
`serve.feedback_window`), and the groups the real-time rewards read them by."""

from __future__ import annotations

from typing import Literal

# raw user signals (issue 19 §4)
UserSignal = Literal[
    "accept",
    "reject",
    "keep",
    "revert",
    "thumbs_up",
    "thumbs_down",
    "followup_dissatisfied",
    "followup_satisfied",
]
Signal = Literal[UserSignal, "silent"]

DECISIONS: tuple[UserSignal, ...] = ("accept", "reject")  # the last one decides
THUMBS: tuple[UserSignal, ...] = ("thumbs_up", "thumbs_down")  # the last one counts
