"""A training row: one segment and the advantage it is trained with.

Flat groups (`batch.py`) and tree groups (`credit_tree.py`) both turn trajectories into
rows; the batch builder packs them. Kept apart so neither of those imports the other's
module for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shadowrl.types import Segment


@dataclass(frozen=True)
class Row:
    """One segment with the advantage it is trained with and the chain it belongs to."""

    segment: Segment
    advantage: float
    chain: int = 0  # index of its trajectory among the batch's
