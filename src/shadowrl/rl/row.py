"""A training row: one segment and the advantage it is trained with, and the seam by
which a group brings its own credit assignment.

The batch builder (`batch.py`) gives a plain group of trajectories the group baseline;
a group that is `OwnCredit` (a tree rollout's leaves, `credit_tree.Leaves`) turns
itself into rows, so the batch builder never imports, or asks about, tree rollouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from shadowrl.types import Segment


@dataclass(frozen=True)
class Row:
    """One segment with the advantage it is trained with and the chain it belongs to."""

    segment: Segment
    advantage: float
    chain: int = 0  # index of its trajectory among the batch's


@runtime_checkable
class OwnCredit(Protocol):
    """A group's trajectories that assign their own advantages."""

    def rows(self, first_chain: int) -> tuple[list[Row], int]:
        """The rows, their chains numbered from `first_chain`; and how many chains."""
        ...
