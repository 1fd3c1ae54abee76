"""The paged KV cache's block allocator: reference counts and runs of free blocks.

A row whose blocks lie consecutively in the pool is read as a view, with no copy
(`paged.PagedKV.read_rows`); a scattered row is gathered. So the allocator tries to keep
each growing row consecutive: a row's next block is the one right after its last when
that one is free, and a row starting afresh (its prompt's blocks known) goes to the free
run with the most room that fits them; in a run right after another row's tail it leaves
that row half the run's slack rather than starting at its tail (packed end to end,
neighbours would collide at the first block either one adds). No block is held back for
a row: a free block goes to whoever asks. The pool, which grows by doubling, grows a step
early when no free run fits a new row's blocks, so a prompt prefilled into a growing
pool is not split between the old part and the new.

Free blocks are kept as maximal runs [start, end), indexed both ways, so taking the
block after a tail, freeing one (merging with its neighbours) and growing are O(1);
placing a new row scans the runs, which happens once per sequence or collision.
"""

from __future__ import annotations

from collections.abc import Container


class Blocks:
    """Blocks 1..n-1 of a pool (block 0 is scratch, never handed out), reference-counted."""

    def __init__(self, blocks: int) -> None:
        self.refs = [0] * blocks
        self.free_count = 0
        self._runs: dict[int, int] = {}  # start -> end (exclusive) of each free run
        self._ends: dict[int, int] = {}  # end -> start
        self._add(1, blocks)

    @property
    def size(self) -> int:
        return len(self.refs)

    def take(
        self, after: int | None, tails: Container[int], need: int = 1, *, fit: bool = False
    ) -> int | None:
        """A free block, referenced once: `after + 1` if that is free, else the first of a
        fresh place for `need` blocks (`tails`: the last blocks of growing rows, whose
        next blocks are theirs to grow into). None when no block is free, or (`fit`: the
        pool may still grow) no free run holds `need` blocks."""
        if after is not None and after + 1 in self._runs:
            block, start = after + 1, after + 1
        elif (place := self._place(tails, need, fit)) is not None:
            block, start = place
        else:
            return None
        self._split(start, block)
        self.refs[block] = 1
        return block

    def release(self, block: int) -> None:
        self.refs[block] -= 1
        if self.refs[block] == 0:
            self._add(block, block + 1)

    def grow(self, blocks: int) -> None:
        """The pool now has `blocks` blocks; the new ones are free."""
        old = self.size
        self.refs += [0] * (blocks - old)
        self._add(old, blocks)

    def _place(self, tails: Container[int], need: int, fit: bool) -> tuple[int, int] | None:
        """(block, its run's start) for a row starting afresh with `need` blocks: the run
        with the most room that fits them. A run right after a growing row's tail is shared
        with that row: it keeps half the slack (in a pool too tight for that, a later row
        may find no run that fits and be split; it is then gathered)."""
        best: tuple[bool, int, int, int] | None = None  # (misfit, -room, block, run start)
        for start, end in self._runs.items():
            gap = max(0, end - start - need) // 2 if start - 1 in tails else 0
            block = start + gap
            key = (end - block < need, block - end, block, start)
            if best is None or key < best:
                best = key
        if best is None or (fit and best[0]):
            return None
        return best[2], best[3]

    def _split(self, start: int, block: int) -> None:
        """Take `block` out of the free run beginning at `start`."""
        end = self._runs.pop(start)
        del self._ends[end]
        self.free_count -= 1
        for a, b in ((start, block), (block + 1, end)):
            if a < b:  # the pieces either side stay free runs (nothing to merge with)
                self._runs[a], self._ends[b] = b, a

    def _add(self, start: int, end: int) -> None:
        """Free [start, end), merged with the runs either side."""
        if start >= end:
            return
        self.free_count += end - start
        if (left := self._ends.pop(start, None)) is not None:
            del self._runs[left]
            start = left
        if (right := self._runs.pop(end, None)) is not None:
            del self._ends[right]
            end = right
        self._runs[start], self._ends[end] = end, start
