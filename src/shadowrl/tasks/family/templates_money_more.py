"""Templates of money and units: cents, splitting bills, tax, discounts, conversions (continued)."""

from __future__ import annotations

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each

LENGTH = Template(
    id="length_units",
    module="lengths",
    source='''
    """Length conversion for the recipe and DIY pages, exact in millimetres."""

    MM = {"mm": 1, "cm": 10, "m": 1000, "km": 1000000, "in": 25.4, "ft": 304.8}


    def to_mm(value, unit):
        if unit not in MM:
            raise ValueError(f"unknown unit {unit!r}")
        return value * MM[unit]


    def convert(value, unit, target, digits=$DIGITS):
        """`value` in `unit` expressed in `target`, rounded to `digits` places."""
        return round(to_mm(value, unit) / MM[target], digits)


    def parse_length(text):
        """'12.5cm' -> millimetres."""
        i = 0
        while i < len(text) and (text[i].isdigit() or text[i] == "."):
            i += 1
        return to_mm(float(text[:i]), text[i:].strip())
    ''',
    params={"DIGITS": ("2", "3")},
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: (
                "convert",
                (
                    r.choice((0, 1, 2.5, 12, 100, r.randint(0, 5000))),
                    r.choice(("mm", "cm", "m", "km", "in", "ft", "yd")),
                    r.choice(("mm", "cm", "m", "in", "ft")),
                ),
            ),
        ),
        *each(
            r,
            6,
            lambda: (
                "parse_length",
                (
                    f"{r.choice((1, 2.5, 30, 0.75))}{r.choice(('mm', 'cm', ' m', 'in', 'ft', 'mi'))}",
                ),
            ),
        ),
    ],
)

TEMPERATURE = Template(
    id="temperatures",
    module="temperature",
    source='''
    """Temperatures for the weather widget, in tenths of a degree to stay exact."""


    def c_to_f(tenths_c):
        """Tenths of a degree Celsius to tenths of a degree Fahrenheit, rounded down."""
        return tenths_c * 9 // 5 + 320


    def f_to_c(tenths_f):
        return (tenths_f - 320) * 5 // 9


    def describe(tenths_c, cold=$COLD, hot=$HOT):
        if tenths_c < cold:
            return "cold"
        if tenths_c > hot:
            return "hot"
        return "mild"


    def average(readings):
        if not readings:
            return None
        return sum(readings) // len(readings)
    ''',
    params={"COLD": ("50", "80"), "HOT": ("250", "280")},
    cases=lambda r: [
        *each(r, 4, lambda: ("c_to_f", (r.randint(-400, 400),))),
        *each(r, 4, lambda: ("f_to_c", (r.randint(-400, 1100),))),
        *each(r, 4, lambda: ("describe", (r.choice((50, 80, 250, 280, r.randint(-100, 400))),))),
        *each(r, 3, lambda: ("average", ([r.randint(-50, 300) for _ in range(r.randint(0, 5))],))),
    ],
)

LOAN = Template(
    id="loan_schedule",
    module="loans",
    source='''
    """A simple loan: fixed monthly payment, interest on the balance, all in cents."""


    def monthly_interest(balance, yearly_percent):
        """Interest for one month, rounded half up to the cent."""
        return (balance * yearly_percent + 600) // 1200


    def schedule(principal, yearly_percent, payment):
        """Balances after each month until paid off (the last payment may be smaller)."""
        if payment <= monthly_interest(principal, yearly_percent):
            raise ValueError("payment never pays the loan off")
        balances = []
        balance = principal
        while balance > 0:
            balance += monthly_interest(balance, yearly_percent)
            balance -= min(payment, balance)
            balances.append(balance)
        return balances


    def months_to_repay(principal, yearly_percent, payment):
        return len(schedule(principal, yearly_percent, payment))
    ''',
    cases=lambda r: [
        *each(r, 4, lambda: ("monthly_interest", (r.randint(0, 500000), r.randint(0, 24)))),
        *each(
            r,
            5,
            lambda: (
                "schedule",
                (r.randint(1000, 20000), r.randint(0, 20), r.randint(1, 6) * 1000),
            ),
        ),
        *each(
            r,
            5,
            lambda: (
                "months_to_repay",
                (r.randint(1000, 90000), r.randint(0, 20), r.randint(5, 40) * 500),
            ),
        ),
    ],
)

SHIPPING = Template(
    id="shipping_rates",
    module="shipping",
    source='''
    """Parcel postage by weight band, with a surcharge for long parcels."""

    BANDS = [(500, 350), (2000, 650), ($HEAVY, 1200)]  # (up to grams, price in cents)
    LONG_CM = $LONG


    def postage(grams, length_cm=0):
        """Price in cents; raises ValueError for a parcel heavier than every band."""
        if grams <= 0:
            raise ValueError("weight must be positive")
        for limit, price in BANDS:
            if grams <= limit:
                return price + surcharge(length_cm)
        raise ValueError(f"too heavy: {grams} g")


    def surcharge(length_cm):
        return 250 if length_cm > LONG_CM else 0


    def total_postage(parcels):
        return sum(postage(g, l) for g, l in parcels)
    ''',
    params={"HEAVY": ("10000", "20000"), "LONG": ("60", "100")},
    cases=lambda r: [
        *each(
            r,
            9,
            lambda: (
                "postage",
                (
                    r.choice(
                        (
                            0,
                            1,
                            500,
                            501,
                            2000,
                            2001,
                            10000,
                            10001,
                            20000,
                            25000,
                            r.randint(1, 20000),
                        )
                    ),
                    r.choice((0, 60, 61, 100, 101, 150)),
                ),
            ),
        ),
        *each(
            r,
            5,
            lambda: (
                "total_postage",
                ([(r.randint(1, 9000), r.randint(0, 120)) for _ in range(r.randint(0, 3))],),
            ),
        ),
    ],
)


TEMPLATES = (LENGTH, TEMPERATURE, LOAN, SHIPPING)
