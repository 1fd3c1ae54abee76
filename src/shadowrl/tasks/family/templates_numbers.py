"""Templates of numbers: roman numerals, statistics, grades, gcd, clamping, rounding."""

from __future__ import annotations

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_collections import ints
from shadowrl.tasks.family.templates_text import each

ROMAN = Template(
    id="roman_numerals",
    module="roman",
    source='''
    """Roman numerals for chapter headings (1 to 3999)."""

    VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
              (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


    def to_roman(n):
        if not 0 < n < 4000:
            raise ValueError("out of range")
        out = ""
        for value, letters in VALUES:
            while n >= value:
                out += letters
                n -= value
        return out


    def from_roman(text):
        single = {letters: value for value, letters in VALUES if len(letters) == 1}
        total = 0
        for i, ch in enumerate(text):
            value = single[ch]
            if i + 1 < len(text) and single[text[i + 1]] > value:
                total -= value
            else:
                total += value
        return total
    ''',
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: (
                "to_roman",
                (r.choice((0, 1, 4, 9, 14, 40, 90, 400, 1994, 3999, 4000, r.randint(1, 3999))),),
            ),
        ),
        *each(
            r,
            6,
            lambda: (
                "from_roman",
                (r.choice(("III", "IV", "IX", "LVIII", "MCMXCIV", "XL", "CDXLIV", "MMXXIV")),),
            ),
        ),
    ],
)

STATS = Template(
    id="basic_stats",
    module="stats_lite",
    source='''
    """Summary statistics for the dashboard, exact for integer data."""


    def median(values):
        """The middle value, or the mean of the two middle ones (a float then)."""
        if not values:
            raise ValueError("no data")
        s = sorted(values)
        mid = len(s) // 2
        if len(s) % 2 == 1:
            return s[mid]
        return (s[mid - 1] + s[mid]) / 2


    def percentile(values, p):
        """Nearest-rank percentile, p in 0..100."""
        if not values:
            raise ValueError("no data")
        s = sorted(values)
        rank = max(1, -(-p * len(s) // 100))
        return s[rank - 1]


    def spread(values):
        return max(values) - min(values) if values else 0
    ''',
    cases=lambda r: [
        *each(r, 5, lambda: ("median", (ints(r, 0, 7),))),
        *each(
            r, 6, lambda: ("percentile", (ints(r, 1, 9), r.choice((0, 10, 25, 50, 75, 90, 100))))
        ),
        *each(r, 3, lambda: ("spread", (ints(r, 0, 6),))),
    ],
)

GRADES = Template(
    id="letter_grades",
    module="grading",
    source='''
    """Turning exam marks into letter grades and class summaries."""

    BOUNDARIES = [($A, "A"), (70, "B"), (60, "C"), (50, "D")]


    def grade(mark):
        if not 0 <= mark <= 100:
            raise ValueError(f"mark out of range: {mark}")
        for lowest, letter in BOUNDARIES:
            if mark >= lowest:
                return letter
        return "F"


    def distribution(marks):
        """{letter: count} for every letter, zero counts included."""
        out = {letter: 0 for _, letter in BOUNDARIES}
        out["F"] = 0
        for m in marks:
            out[grade(m)] += 1
        return out


    def pass_rate(marks, pass_mark=50):
        """Whole percentage of marks at or above `pass_mark`."""
        if not marks:
            return 0
        return sum(m >= pass_mark for m in marks) * 100 // len(marks)
    ''',
    params={"A": ("80", "85")},
    cases=lambda r: [
        *each(
            r,
            7,
            lambda: (
                "grade",
                (
                    r.choice(
                        (-1, 0, 49, 50, 59, 60, 69, 70, 79, 80, 85, 100, 101, r.randint(0, 100))
                    ),
                ),
            ),
        ),
        *each(
            r, 4, lambda: ("distribution", ([r.randint(30, 100) for _ in range(r.randint(0, 6))],))
        ),
        *each(r, 3, lambda: ("pass_rate", ([r.randint(30, 100) for _ in range(r.randint(0, 6))],))),
    ],
)

GCD = Template(
    id="gcd_lcm",
    module="fractions_lite",
    source='''
    """Fractions for the recipe scaler, kept in lowest terms."""


    def gcd(a, b):
        a, b = abs(a), abs(b)
        while b:
            a, b = b, a % b
        return a


    def lcm(a, b):
        return abs(a * b) // gcd(a, b) if a and b else 0


    def reduce(num, den):
        if den == 0:
            raise ZeroDivisionError("zero denominator")
        g = gcd(num, den)
        sign = -1 if den < 0 else 1
        return sign * num // g, sign * den // g


    def add(a, b):
        """Sum of two (num, den) fractions, reduced."""
        den = lcm(a[1], b[1])
        return reduce(a[0] * (den // a[1]) + b[0] * (den // b[1]), den)
    ''',
    cases=lambda r: [
        *each(r, 3, lambda: ("gcd", (r.randint(-30, 60), r.randint(0, 60)))),
        *each(r, 3, lambda: ("lcm", (r.randint(0, 20), r.randint(0, 20)))),
        *each(r, 4, lambda: ("reduce", (r.randint(-40, 40), r.choice((0, -6, 4, 12, 9, 25))))),
        *each(
            r,
            4,
            lambda: (
                "add",
                ((r.randint(-5, 9), r.randint(1, 12)), (r.randint(-5, 9), r.randint(1, 12))),
            ),
        ),
    ],
)

SCALE = Template(
    id="clamp_scale",
    module="scaling",
    source='''
    """Mapping slider positions to values for the audio mixer."""


    def clamp(value, low, high):
        if low > high:
            raise ValueError("low above high")
        return max(low, min(value, high))


    def rescale(value, old_low, old_high, new_low=0, new_high=$TOP):
        """`value` from one range to another, clamped, rounded down."""
        value = clamp(value, old_low, old_high)
        span = old_high - old_low
        if span == 0:
            return new_low
        return new_low + (value - old_low) * (new_high - new_low) // span


    def to_percent(part, whole):
        return 0 if whole == 0 else round(part * 100 / whole)
    ''',
    params={"TOP": ("100", "127", "255")},
    cases=lambda r: [
        *each(
            r, 4, lambda: ("clamp", (r.randint(-20, 120), r.randint(-5, 40), r.randint(30, 100)))
        ),
        *each(
            r, 6, lambda: ("rescale", (r.randint(-20, 120), r.choice((0, 10)), r.choice((10, 100))))
        ),
        *each(r, 4, lambda: ("to_percent", (r.randint(0, 50), r.randint(0, 60)))),
    ],
)


TEMPLATES = (ROMAN, STATS, GRADES, GCD, SCALE)
