"""Templates of numbers: roman numerals, statistics, grades, gcd, clamping, rounding (continued)."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each

FIB = Template(
    id="sequences",
    module="sequences",
    source='''
    """Number sequences for the puzzle generator."""


    def fibonacci(n):
        """The first `n` Fibonacci numbers, starting 0, 1."""
        out = []
        a, b = 0, 1
        for _ in range(n):
            out.append(a)
            a, b = b, a + b
        return out


    def collatz_steps(n):
        """Steps for n to reach 1."""
        if n < 1:
            raise ValueError("n must be positive")
        steps = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            steps += 1
        return steps


    def triangular(n):
        return n * (n + 1) // 2
    ''',
    cases=lambda r: [
        *each(r, 5, lambda: ("fibonacci", (r.randint(0, 12),))),
        *each(
            r, 6, lambda: ("collatz_steps", (r.choice((0, 1, 2, 3, 6, 7, 27, r.randint(1, 200))),))
        ),
        *each(r, 3, lambda: ("triangular", (r.randint(0, 50),))),
    ],
)

ROUNDING = Template(
    id="price_rounding",
    module="pricing",
    source='''
    """Retail price points: prices in cents rounded to end in $END."""


    def round_up_to(price, step):
        return -(-price // step) * step


    def charm_price(price):
        """The smallest price ending in $END cents (x.$END) that is at least `price`."""
        whole = price // 100
        candidate = whole * 100 + $END
        if candidate < price:
            candidate += 100
        return candidate


    def markup(cost, percent=$MARKUP):
        """Cost plus a percentage, then charm-priced."""
        return charm_price(cost + cost * percent // 100)
    ''',
    params={"END": ("99", "95", "49"), "MARKUP": ("30", "40")},
    cases=lambda r: [
        *each(r, 4, lambda: ("round_up_to", (r.randint(0, 1000), r.choice((5, 10, 25, 50))))),
        *each(
            r,
            6,
            lambda: ("charm_price", (r.choice((0, 99, 100, 149, 150, 199, r.randint(0, 5000))),)),
        ),
        *each(r, 4, lambda: ("markup", (r.randint(0, 5000),))),
    ],
)

LUHN = Template(
    id="luhn_check",
    module="cards",
    source='''
    """Card number checks before the payment gateway is called."""


    def luhn_valid(number):
        digits = [int(ch) for ch in number if ch.isdigit()]
        if len(digits) < 2:
            return False
        total = 0
        for i, d in enumerate(reversed(digits)):
            if i % 2 == 1:
                d *= 2
                if d > 9:
                    d -= 9
            total += d
        return total % 10 == 0


    def check_digit(partial):
        """The digit that makes `partial` + digit pass the Luhn check."""
        for d in range(10):
            if luhn_valid(partial + str(d)):
                return d
        raise ValueError("no check digit")
    ''',
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: (
                "luhn_valid",
                (
                    r.choice(
                        (
                            "4539 1488 0343 6467",
                            "79927398713",
                            "79927398710",
                            "0",
                            "1234567812345670",
                            "8273 1232 7352 0569",
                            "059",
                        )
                    ),
                ),
            ),
        ),
        *each(
            r,
            6,
            lambda: (
                "check_digit",
                ("".join(str(r.randint(0, 9)) for _ in range(r.randint(1, 12))),),
            ),
        ),
    ],
)

BOWLING = Template(
    id="bowling_score",
    module="bowling",
    source='''
    """Ten-pin bowling scores from a list of rolls."""

    FRAMES = $FRAMES


    def score(rolls):
        total = 0
        i = 0
        for _ in range(FRAMES):
            if i >= len(rolls):
                break
            if rolls[i] == 10:
                total += 10 + sum(rolls[i + 1 : i + 3])
                i += 1
            elif sum(rolls[i : i + 2]) == 10:
                total += 10 + sum(rolls[i + 2 : i + 3])
                i += 2
            else:
                total += sum(rolls[i : i + 2])
                i += 2
        return total
    ''',
    params={"FRAMES": ("10",)},
    cases=lambda r: each(r, 14, lambda: ("score", (bowl(r),))),
)


def bowl(r: random.Random) -> list[int]:
    rolls: list[int] = []
    for _ in range(r.randint(1, 12)):
        first = r.choice((10, r.randint(0, 10), r.randint(0, 9)))
        rolls.append(first)
        if first < 10:
            rolls.append(r.choice((10 - first, r.randint(0, 10 - first))))
    return rolls


TEMPLATES = (FIB, ROUNDING, LUHN, BOWLING)
