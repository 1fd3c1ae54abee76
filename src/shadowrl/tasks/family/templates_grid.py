"""Templates of grids and tables: board moves, map regions, rectangles, text tables,
spreadsheet columns, rankings, value bands and recipe units."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each


def _cell(r: random.Random) -> tuple[int, int]:
    return r.choice((-1, 0, 1, 4, 7, 9, 10)), r.choice((-1, 0, 2, 5, 6, 7, 8))


BOARD = Template(
    id="board_moves",
    module="board",
    source='''
    """Moves on a board of WIDTH x HEIGHT cells; a cell is (column, row) from (0, 0)."""

    WIDTH = $WIDTH
    HEIGHT = $HEIGHT


    def on_board(cell):
        col, row = cell
        return 0 <= col < WIDTH and 0 <= row < HEIGHT


    def neighbours(cell, diagonal=False):
        """The cells next to `cell` on the board, row by row, then column by column."""
        col, row = cell
        out = []
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                if (dr, dc) == (0, 0) or (not diagonal and dr and dc):
                    continue
                if on_board((col + dc, row + dr)):
                    out.append((col + dc, row + dr))
        return out


    def distance(a, b, diagonal=False):
        """The fewest moves from a to b: Manhattan, or Chebyshev when diagonals count."""
        dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
        return max(dx, dy) if diagonal else dx + dy
    ''',
    params={"WIDTH": ("8", "10"), "HEIGHT": ("6", "8")},
    cases=lambda r: [
        *each(r, 4, lambda: ("on_board", (_cell(r),))),
        *each(r, 6, lambda: ("neighbours", (_cell(r), r.random() < 0.5))),
        *each(r, 5, lambda: ("distance", (_cell(r), _cell(r), r.random() < 0.5))),
    ],
)


def _map(r: random.Random) -> list[str]:
    rows, cols = r.randint(1, 4), r.randint(1, 5)
    return ["".join(r.choice("#X...") for _ in range(cols)) for _ in range(rows)]


def _start(r: random.Random, grid: list[str]) -> tuple[list[str], tuple[int, int]]:
    return grid, (r.randrange(len(grid)), r.randrange(len(grid[0])))


REGIONS = Template(
    id="flood_fill",
    module="regions",
    source='''
    """Regions of a map drawn as text: '$WALL' is wall, anything else is floor."""

    WALL = "$WALL"


    def fill(grid, cell, seen=None):
        """The floor cells reachable from `cell` (row, col) by steps up, down, left, right."""
        seen = set() if seen is None else seen
        r, c = cell
        if not (0 <= r < len(grid) and 0 <= c < len(grid[0])):
            return seen
        if cell in seen or grid[r][c] == WALL:
            return seen
        seen.add(cell)
        for step in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            fill(grid, step, seen)
        return seen


    def region_size(grid, start):
        return len(fill(grid, start))


    def count_regions(grid):
        """The number of separate floor regions."""
        done = set()
        count = 0
        for r, line in enumerate(grid):
            for c, ch in enumerate(line):
                if ch != WALL and (r, c) not in done:
                    done |= fill(grid, (r, c))
                    count += 1
        return count
    ''',
    params={"WALL": ("#", "X")},
    cases=lambda r: [
        *each(r, 8, lambda: ("region_size", _start(r, _map(r)))),
        *each(r, 7, lambda: ("count_regions", (_map(r),))),
    ],
)


def _rect(r: random.Random) -> tuple[int, int, int, int]:
    left, top = r.randint(0, 9), r.randint(0, 9)
    return left, top, left + r.choice((0, 1, 3, 5)), top + r.choice((1, 2, 4, 6))


def _near(r: random.Random, rect: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """`rect` and a rectangle near it, which often overlaps it."""
    left, top = rect[0] + r.randint(-3, 3), rect[1] + r.randint(-3, 3)
    return rect, (left, top, left + r.choice((0, 2, 4)), top + r.choice((1, 3, 5)))


RECTS = Template(
    id="rectangles",
    module="rects",
    source='''
    """Rectangles on an integer grid as (left, top, right, bottom), right and bottom excluded."""


    def area(rect):
        left, top, right, bottom = rect
        return max(right - left, 0) * max(bottom - top, 0)


    def intersection(a, b):
        """The overlap of a and b, or None if they share no cell."""
        left, top = max(a[0], b[0]), max(a[1], b[1])
        right, bottom = min(a[2], b[2]), min(a[3], b[3])
        if left >= right or top >= bottom:
            return None
        return (left, top, right, bottom)


    def covered(rects):
        """How many cells at least one of `rects` covers."""
        cells = set()
        for left, top, right, bottom in rects:
            for x in range(left, right):
                for y in range(top, bottom):
                    cells.add((x, y))
        return len(cells)


    def snapped(rect, step=$STEP):
        """`rect` grown outwards to the nearest multiples of `step`."""
        left, top, right, bottom = rect
        down = (left // step * step, top // step * step)
        return (*down, -(-right // step) * step, -(-bottom // step) * step)
    ''',
    params={"STEP": ("4", "5", "8")},
    cases=lambda r: [
        *each(r, 3, lambda: ("area", (_rect(r),))),
        *each(r, 6, lambda: ("intersection", _near(r, _rect(r)))),
        *each(r, 4, lambda: ("covered", ([_rect(r) for _ in range(r.randint(0, 3))],))),
        *each(
            r, 4, lambda: ("snapped", (_rect(r),) + (r.choice((2, 3, 10)),) * (r.random() < 0.4))
        ),
    ],
)


def _row(r: random.Random, n: int) -> list[object]:
    return [r.choice(("x", "tea", "", "Bob", 7, 1250, -3)) for _ in range(n)]


TABLE = Template(
    id="text_table",
    module="tables",
    source='''
    """Plain-text tables for the command-line report."""


    def widths(rows):
        """The widest cell of each column."""
        out = [0] * max((len(row) for row in rows), default=0)
        for row in rows:
            for i, cell in enumerate(row):
                out[i] = max(out[i], len(str(cell)))
        return out


    def table(header, rows, sep="$SEP"):
        """Lines: the header, a rule, then the rows; numbers right-aligned, text left."""
        all_rows = [header, *rows]
        size = widths(all_rows)
        lines = []
        for n, row in enumerate(all_rows):
            cells = []
            for i, cell in enumerate(row):
                text = str(cell)
                cells.append(text.rjust(size[i]) if isinstance(cell, int) else text.ljust(size[i]))
            lines.append(sep.join(cells).rstrip())
            if n == 0:
                lines.append(sep.join("$RULE" * w for w in size))
        return lines
    ''',
    params={"SEP": (" | ", "  ", " "), "RULE": ("-", "=")},
    cases=lambda r: [
        *each(
            r, 5, lambda: ("widths", ([_row(r, r.randint(0, 3)) for _ in range(r.randint(0, 3))],))
        ),
        *each(
            r,
            10,
            lambda: ("table", (["name", "qty"], [_row(r, 2) for _ in range(r.randint(0, 3))])),
        ),
    ],
)

NUMBERS = (0, 1, 26, 27, 52, 53, 702, 703, 18278, 18279, 20000)

COLUMNS = Template(
    id="column_letters",
    module="columns",
    source='''
    """Spreadsheet columns: 1 is 'A', 26 is 'Z', 27 is 'AA'; cells like 'B12'."""

    MAX_COLUMN = $MAX


    def column_name(number):
        if not 1 <= number <= MAX_COLUMN:
            raise ValueError(f"no column {number}")
        rest, digit = divmod(number - 1, 26)
        return (column_name(rest) if rest else "") + chr(ord("A") + digit)


    def column_number(name):
        """The inverse of column_name; letters in any case."""
        number = 0
        for ch in name.upper():
            if not "A" <= ch <= "Z":
                raise ValueError(f"bad column {name!r}")
            number = number * 26 + ord(ch) - ord("A") + 1
        return number


    def split_cell(ref):
        """'B12' -> (2, 12): the column number and the row."""
        letters = ref.rstrip("0123456789")
        digits = ref[len(letters) :]
        if not letters or not digits:
            raise ValueError(f"bad cell {ref!r}")
        return column_number(letters), int(digits)
    ''',
    params={"MAX": ("16384", "18278", "702")},
    cases=lambda r: [
        *each(r, 6, lambda: ("column_name", (r.choice(NUMBERS),))),
        *each(
            r, 5, lambda: ("column_number", (r.choice(("A", "z", "AA", "az", "ZZ", "A1", "XFD")),))
        ),
        *each(r, 4, lambda: ("split_cell", (r.choice(("B12", "aa7", "Z1", "12", "C", "$A$1")),))),
    ],
)


def _scores(r: random.Random) -> dict[str, int]:
    return {
        name: r.choice((3, 5, 5, 8, 10))
        for name in r.sample(("ann", "bob", "cy", "dee", "eve"), r.randint(0, 5))
    }


RANKS = Template(
    id="leaderboard",
    module="leaderboard",
    source='''
    """Leaderboard ranks: ties share a rank and the next rank is skipped ('1224')."""


    def ranks(scores):
        """[(rank, name, score)] from {name: score}, best first, names in order on a tie."""
        ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        out = []
        for i, (name, score) in enumerate(ordered):
            if i > 0 and score == ordered[i - 1][1]:
                rank = out[-1][0]
            else:
                rank = i + 1
            out.append((rank, name, score))
        return out


    def top(scores, n=$TOP):
        """Names ranked `n` or better: more than `n` of them when there is a tie."""
        return [name for rank, name, _ in ranks(scores) if rank <= n]


    def rank_of(scores, name):
        for rank, who, _ in ranks(scores):
            if who == name:
                return rank
        raise KeyError(name)
    ''',
    params={"TOP": ("2", "3")},
    cases=lambda r: [
        *each(r, 6, lambda: ("ranks", (_scores(r),))),
        *each(r, 5, lambda: ("top", (_scores(r),) + (r.choice((1, 2, 4)),) * (r.random() < 0.5))),
        *each(r, 4, lambda: ("rank_of", (_scores(r), r.choice(("ann", "cy", "eve"))))),
    ],
)

BANDS = Template(
    id="value_bands",
    module="bands",
    source='''
    """Values in bands of fixed width for the survey summary: '20-29' and so on."""

    WIDTH = $WIDTH
    TOP = $TOP  # values from TOP up share one open band, like '80+'


    def band(value):
        if value < 0:
            raise ValueError("negative value")
        if value >= TOP:
            return f"{TOP}+"
        low = value // WIDTH * WIDTH
        return f"{low}-{low + WIDTH - 1}"


    def band_counts(values):
        """{band: count} in ascending order, the empty bands included."""
        counts = {}
        for start in range(0, TOP, WIDTH):
            counts[f"{start}-{start + WIDTH - 1}"] = 0
        counts[f"{TOP}+"] = 0
        for value in values:
            counts[band(value)] += 1
        return counts
    ''',
    params={"WIDTH": ("10", "5"), "TOP": ("80", "60", "90")},
    cases=lambda r: [
        *each(r, 8, lambda: ("band", (r.choice((-1, 0, 4, 5, 9, 10, 59, 60, 79, 80, 89, 90)),))),
        *each(r, 6, lambda: ("band_counts", ([r.randint(0, 99) for _ in range(r.randint(0, 4))],))),
    ],
)


ML = (1, 5, 15, 240, 333, 0, 2, 7, 17, 20, 250, 262, 500, 999)

RECIPES = Template(
    id="recipe_scaling",
    module="recipes",
    source='''
    """Scaling recipes; amounts are whole millilitres, shown in kitchen units."""

    UNITS = [("$BIG", $BIG_ML), ("tbsp", 15), ("tsp", 5)]  # largest first


    def scale(amount, serves, wanted):
        """`amount` for `serves` people scaled to `wanted` people, rounded half up."""
        if serves <= 0 or wanted < 0:
            raise ValueError("bad servings")
        return (amount * wanted * 2 + serves) // (serves * 2)


    def spoken(ml):
        """Millilitres in kitchen units, largest first, the rest in ml: '1 tbsp 2 ml'."""
        parts = []
        for name, size in UNITS:
            count, ml = divmod(ml, size)
            if count:
                parts.append(f"{count} {name}")
        if ml:
            parts.append(f"{ml} ml")
        return " ".join(parts) or "0 ml"
    ''',
    params={"BIG": ("cup", "mug"), "BIG_ML": ("240", "250")},
    cases=lambda r: [
        *each(
            r,
            7,
            lambda: (
                "scale",
                (r.choice(ML[:5]), r.choice((0, 1, 2, 4, 6)), r.choice((-1, 0, 3, 8))),
            ),
        ),
        *each(r, 8, lambda: ("spoken", (r.choice(ML),))),
    ],
)


TEMPLATES = (BOARD, REGIONS, RECTS, TABLE, COLUMNS, RANKS, BANDS, RECIPES)
