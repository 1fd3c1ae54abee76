"""Templates of collections: chunking, grouping, paging, merging, dedupe, inventories (continued)."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each

INVENTORY = Template(
    id="inventory",
    module="stock",
    source='''
    """Stock levels of a small shop: what to reorder and how much."""

    REORDER_AT = $LOW
    TARGET = $TARGET


    def needs_reorder(stock):
        """Item names at or below the reorder level, sorted."""
        return sorted(name for name, qty in stock.items() if qty <= REORDER_AT)


    def order_quantities(stock):
        """How many of each low item to order to get back to TARGET."""
        return {name: TARGET - stock[name] for name in needs_reorder(stock)}


    def apply_sales(stock, sales):
        """New stock after `sales` (name, qty) pairs; ValueError when selling what is not there."""
        new = dict(stock)
        for name, qty in sales:
            if new.get(name, 0) < qty:
                raise ValueError(f"not enough {name}")
            new[name] -= qty
        return new
    ''',
    params={"LOW": ("3", "5"), "TARGET": ("20", "12")},
    cases=lambda r: [
        *each(r, 5, lambda: ("needs_reorder", (stock(r),))),
        *each(r, 5, lambda: ("order_quantities", (stock(r),))),
        *each(
            r,
            4,
            lambda: (
                "apply_sales",
                (
                    stock(r),
                    [
                        (r.choice(("pen", "ink", "pad")), r.randint(0, 6))
                        for _ in range(r.randint(0, 3))
                    ],
                ),
            ),
        ),
    ],
)


def stock(r: random.Random) -> dict[str, int]:
    return {name: r.randint(0, 9) for name in ("pen", "ink", "pad", "cup") if r.random() < 0.8}


FLATTEN = Template(
    id="flatten",
    module="nesting",
    source='''
    """Flattening nested lists from the importer."""


    def flatten(items, depth=-1):
        """Items of nested lists in order; `depth` levels only (-1 = all)."""
        out = []
        for item in items:
            if isinstance(item, list) and depth != 0:
                out.extend(flatten(item, depth - 1))
            else:
                out.append(item)
        return out


    def max_depth(items):
        """1 for a flat list, 0 for a non-list."""
        if not isinstance(items, list):
            return 0
        return 1 + max((max_depth(i) for i in items), default=0)
    ''',
    cases=lambda r: [
        *each(r, 8, lambda: ("flatten", (nested(r, 3), r.choice((-1, -1, 0, 1, 2))))),
        *each(r, 6, lambda: ("max_depth", (nested(r, 3),))),
    ],
)


def nested(r: random.Random, depth: int) -> list[object]:
    out: list[object] = []
    for _ in range(r.randint(0, 3)):
        out.append(nested(r, depth - 1) if depth and r.random() < 0.4 else r.randint(0, 9))
    return out


MATRIX = Template(
    id="matrix_ops",
    module="grid",
    source='''
    """Small grids for the board-game engine, as lists of rows."""


    def transpose(grid):
        if not grid:
            return []
        return [[row[c] for row in grid] for c in range(len(grid[0]))]


    def rotate(grid):
        """90 degrees clockwise."""
        return [list(reversed(col)) for col in transpose(grid)]


    def neighbours(grid, r, c):
        """Sum of the up to 8 cells around (r, c)."""
        total = 0
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                if (dr or dc) and 0 <= r + dr < len(grid) and 0 <= c + dc < len(grid[0]):
                    total += grid[r + dr][c + dc]
        return total
    ''',
    cases=lambda r: [
        *each(r, 4, lambda: ("transpose", (grid(r),))),
        *each(r, 4, lambda: ("rotate", (grid(r),))),
        *each(
            r,
            6,
            lambda: ("neighbours", (g := grid(r, 2), r.randrange(len(g)), r.randrange(len(g[0])))),
        ),
    ],
)


def grid(r: random.Random, low: int = 1) -> list[list[int]]:
    cols = r.randint(low, 4)
    return [[r.randint(0, 9) for _ in range(cols)] for _ in range(r.randint(low, 4))]


RANGES = Template(
    id="merge_intervals",
    module="intervals",
    source='''
    """Merging busy intervals from several calendars (half-open [start, end) minutes)."""


    def merge(intervals):
        out = []
        for start, end in sorted(intervals):
            if out and start <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], end))
            else:
                out.append((start, end))
        return out


    def total_busy(intervals):
        return sum(end - start for start, end in merge(intervals))


    def gaps(intervals, day_start=$START, day_end=1080):
        """Free intervals of at least one minute between day_start and day_end."""
        out = []
        cursor = day_start
        for start, end in merge(intervals):
            if start > cursor:
                out.append((cursor, min(start, day_end)))
            cursor = max(cursor, end)
        if cursor < day_end:
            out.append((cursor, day_end))
        return [g for g in out if g[1] > g[0]]
    ''',
    params={"START": ("480", "540")},
    cases=lambda r: [
        *each(r, 5, lambda: ("merge", (spans(r),))),
        *each(r, 4, lambda: ("total_busy", (spans(r),))),
        *each(r, 5, lambda: ("gaps", (spans(r),))),
    ],
)


def spans(r: random.Random) -> list[tuple[int, int]]:
    out = []
    for _ in range(r.randint(0, 4)):
        start = r.randrange(420, 1100, 30)
        out.append((start, start + r.randrange(0, 180, 30)))
    return out


TEMPLATES = (INVENTORY, FLATTEN, MATRIX, RANGES)
