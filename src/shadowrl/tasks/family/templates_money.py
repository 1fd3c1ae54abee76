"""Templates of money and units: cents, splitting bills, tax, discounts, conversions."""

from __future__ import annotations

import random
from decimal import Decimal

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each


def cents(r: random.Random, hi: int = 100_000) -> int:
    return r.choice((0, 1, 99, 100, r.randint(0, hi), r.randint(0, hi)))


SPLIT = Template(
    id="split_bill",
    module="split_bill",
    source='''
    """Splitting a bill between friends, in whole cents."""


    def split(total_cents, people):
        """Shares that add up to the total; the first ones get the leftover cents."""
        if people <= 0:
            raise ValueError("nobody to split between")
        base, extra = divmod(total_cents, people)
        return [base + 1 if i < extra else base for i in range(people)]


    def with_tip(total_cents, percent=$TIP):
        """The total plus a tip, rounded half up to the cent."""
        return total_cents + (total_cents * percent + 50) // 100
    ''',
    params={"TIP": ("10", "12", "15", "18")},
    cases=lambda r: [
        *each(r, 8, lambda: ("split", (cents(r, 20000), r.randint(0, 7)))),
        *each(r, 6, lambda: ("with_tip", (cents(r, 20000), r.randint(0, 25)))),
    ],
)

FORMAT_MONEY = Template(
    id="format_money",
    module="money_format",
    source='''
    """Printing amounts of cents the way invoices show them: '${SYM}1,234.05'."""

    SYMBOL = "$SYM"


    def format_cents(amount):
        sign = "-" if amount < 0 else ""
        amount = abs(amount)
        units, cents = divmod(amount, 100)
        digits = str(units)
        groups = []
        while len(digits) > 3:
            groups.insert(0, digits[-3:])
            digits = digits[:-3]
        groups.insert(0, digits)
        return f"{sign}{SYMBOL}{','.join(groups)}.{cents:02d}"


    def parse_cents(text):
        """Inverse of format_cents."""
        negative = text.startswith("-")
        body = text.lstrip("-").removeprefix(SYMBOL).replace(",", "")
        units, _, cents = body.partition(".")
        value = int(units) * 100 + int(cents or 0)
        return -value if negative else value
    ''',
    params={"SYM": ("£", "€", "USD ")},
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: (
                "format_cents",
                (r.choice((1, -1)) * r.choice((0, 5, 99, 100, 123456, r.randint(0, 10**9))),),
            ),
        ),
        *each(
            r,
            6,
            lambda: (
                "parse_cents",
                (
                    r.choice(("", "-"))
                    + r.choice(("1,234.05", "0.99", "12.00", "1,000,000.10", "7")),
                ),
            ),
        ),
    ],
)

TAX = Template(
    id="tax_brackets",
    module="income_tax",
    source='''
    """Progressive income tax: each rate applies only to the part of income in its band."""

    BANDS = [(0, 0), ($LOW, 20), ($HIGH, 40)]  # (band starts at, percent)


    def tax(income):
        """Tax in whole units, rounded down."""
        owed = 0
        for i, (start, rate) in enumerate(BANDS):
            end = BANDS[i + 1][0] if i + 1 < len(BANDS) else None
            if income <= start:
                break
            top = income if end is None else min(income, end)
            owed += (top - start) * rate
        return owed // 100


    def marginal_rate(income):
        rate = 0
        for start, band_rate in BANDS:
            if income > start:
                rate = band_rate
        return rate
    ''',
    params={"LOW": ("10000", "12500"), "HIGH": ("50000", "60000")},
    cases=lambda r: [
        *each(
            r,
            9,
            lambda: (
                "tax",
                (
                    r.choice(
                        (0, 10000, 12500, 50000, 60000, r.randint(0, 200000), r.randint(0, 70000))
                    ),
                ),
            ),
        ),
        *each(r, 5, lambda: ("marginal_rate", (r.randint(0, 120000),))),
    ],
)

DISCOUNT = Template(
    id="basket_discounts",
    module="discounts",
    source='''
    """Shop discounts: multi-buy offers and a threshold coupon, prices in cents."""


    def multibuy(price, quantity, buy=$BUY, free=1):
        """Buy `buy`, get `free` more free: pay for the rest."""
        group = buy + free
        paid = quantity // group * buy + min(quantity % group, buy)
        return paid * price


    def coupon(total, threshold=$THRESHOLD, off=500):
        """`off` cents off a total of at least `threshold`, never below zero."""
        if total >= threshold:
            return max(total - off, 0)
        return total


    def checkout(lines):
        """`lines` is a list of (price, quantity); multibuy per line, then the coupon."""
        return coupon(sum(multibuy(price, qty) for price, qty in lines))
    ''',
    params={"BUY": ("2", "3"), "THRESHOLD": ("5000", "3000")},
    cases=lambda r: [
        *each(r, 6, lambda: ("multibuy", (r.choice((99, 250, 1000)), r.randint(0, 11)))),
        *each(
            r,
            4,
            lambda: ("coupon", (r.choice((0, 300, 2999, 3000, 4999, 5000, r.randint(0, 9000))),)),
        ),
        *each(
            r,
            4,
            lambda: (
                "checkout",
                ([(r.choice((150, 999, 2500)), r.randint(1, 5)) for _ in range(r.randint(1, 3))],),
            ),
        ),
    ],
)

CONVERT = Template(
    id="currency_convert",
    module="fx",
    source='''
    """Currency conversion at fixed daily rates, with Decimal and banker's rounding."""

    from decimal import ROUND_HALF_EVEN, Decimal

    RATES = {"EUR": Decimal("1"), "USD": Decimal("$USD"), "GBP": Decimal("0.85"), "JPY": Decimal("160")}
    CENT = Decimal("0.01")


    def convert(amount, source, target):
        """`amount` (a Decimal) in `source` currency, expressed in `target`, to the cent."""
        if source not in RATES or target not in RATES:
            raise KeyError(f"no rate for {source} or {target}")
        in_eur = amount / RATES[source]
        return (in_eur * RATES[target]).quantize(CENT, rounding=ROUND_HALF_EVEN)


    def total_in(amounts, target):
        """Sum of (amount, currency) pairs in `target`."""
        return sum((convert(a, c, target) for a, c in amounts), Decimal("0.00"))
    ''',
    params={"USD": ("1.08", "1.10", "1.05")},
    cases=lambda r: [
        *each(
            r,
            10,
            lambda: (
                "convert",
                (
                    Decimal(r.randint(0, 100000)) / 100,
                    r.choice(("EUR", "USD", "GBP", "JPY", "CHF")),
                    r.choice(("EUR", "USD", "GBP", "JPY")),
                ),
            ),
        ),
        *each(
            r,
            4,
            lambda: (
                "total_in",
                (
                    [
                        (Decimal(r.randint(0, 5000)) / 100, r.choice(("EUR", "USD", "GBP")))
                        for _ in range(r.randint(0, 3))
                    ],
                    r.choice(("EUR", "GBP")),
                ),
            ),
        ),
    ],
)


TEMPLATES = (SPLIT, FORMAT_MONEY, TAX, DISCOUNT, CONVERT)
