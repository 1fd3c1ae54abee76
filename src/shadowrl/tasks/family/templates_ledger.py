"""Templates of accounts and orders: ledgers, order totals, terms, points, payroll, fees."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Call, Template
from shadowrl.tasks.family.templates_text import each


def _entries(r: random.Random) -> list[tuple[str, int]]:
    kinds = ("deposit", "withdraw", "withdraw")
    out = [(r.choice(kinds), r.choice((50, 300, 1000, 2500, 4000))) for _ in range(r.randint(0, 6))]
    if r.random() < 0.15:  # now and then a bad entry: an unknown kind or no amount
        out.insert(r.randint(0, len(out)), r.choice((("refund", 100), ("deposit", 0))))
    return out


def _ledger_cases(r: random.Random) -> list[Call]:
    starts = (0, 100, 1000, -200, 5000)
    history = (-900, -1, 0, 0, 1, 250)
    return [
        *each(r, 10, lambda: ("apply", (r.choice(starts), _entries(r)))),
        *each(r, 5, lambda: ("fees", ([r.choice(history) for _ in range(r.randint(0, 5))],))),
    ]


LEDGER = Template(
    id="bank_ledger",
    module="ledger",
    source='''
    """A current account's ledger: deposits, withdrawals and an agreed overdraft."""

    OVERDRAFT = $OVERDRAFT  # cents the balance may go below zero


    def apply(balance, entries):
        """The balance after each (kind, cents) entry; a withdrawal past the overdraft is
        refused and leaves the balance as it was."""
        history = []
        for kind, amount in entries:
            if amount <= 0:
                raise ValueError("amounts are positive")
            if kind == "deposit":
                balance += amount
            elif kind == "withdraw":
                if balance - amount < -OVERDRAFT:
                    history.append(balance)
                    continue
                balance -= amount
            else:
                raise ValueError(f"unknown entry {kind!r}")
            history.append(balance)
        return history


    def fees(history, fee=$FEE):
        """A fee for every entry that left the balance below zero."""
        return sum(fee for b in history if b < 0)
    ''',
    params={"OVERDRAFT": ("0", "500", "2000"), "FEE": ("25", "30")},
    cases=_ledger_cases,
)


def _lines(r: random.Random) -> list[tuple[int, int]]:
    prices = (99, 250, 1000, 1999, r.randint(1, 4000))
    return [(r.randint(0, 12), r.choice(prices)) for _ in range(r.randint(0, 4))]


def _order_cases(r: random.Random) -> list[Call]:
    edges = ([(1, 4999)], [(1, 5000)], [(1, 7499)], [(1, 7500)], [(2, 3750)], [(-1, 100)])
    return [
        *each(r, 6, lambda: ("subtotal", (_lines(r),))),
        ("subtotal", ([(3, 100), (-2, 100)],)),
        *each(r, 6, lambda: ("order_total", (_lines(r), r.choice((0, 0, 500, 2000, 99999))))),
        *each(r, 4, lambda: ("order_total", (r.choice(edges), r.choice((0, 0, 1))))),
    ]


ORDER = Template(
    id="order_totals",
    module="orders",
    source='''
    """Order totals for the web shop, in cents."""

    FREE_SHIPPING = $FREE  # subtotal from which shipping is free
    SHIPPING = $SHIP


    def subtotal(lines):
        """Sum of quantity x unit price; every $BULK-th unit of a line is half price."""
        total = 0
        for qty, unit in lines:
            if qty < 0:
                raise ValueError("negative quantity")
            halves = qty // $BULK
            total += (qty - halves) * unit + halves * (unit // 2)
        return total


    def order_total(lines, coupon=0):
        """Subtotal less the coupon (never below zero), plus shipping unless it is free."""
        goods = max(subtotal(lines) - coupon, 0)
        if goods == 0 or goods >= FREE_SHIPPING:
            return goods
        return goods + SHIPPING
    ''',
    params={"FREE": ("5000", "7500"), "SHIP": ("495", "399"), "BULK": ("3", "4")},
    cases=_order_cases,
)


def _reorder_cases(r: random.Random) -> list[Call]:
    def quantity() -> Call:
        args = (r.randint(0, 120), r.choice((0, 0, 12, 30)), r.randint(1, 15), r.randint(1, 6))
        return ("order_quantity", args + (r.choice((1, 6, 24)),) * (r.random() < 0.7))

    return [
        *each(r, 5, lambda: ("reorder_point", (r.randint(0, 40), r.randint(0, 10)))),
        *each(r, 12, quantity),
    ]


REORDER = Template(
    id="reorder_point",
    module="replenish",
    source='''
    """When to reorder a product and how much, from its daily use and supplier lead time."""

    SAFETY_DAYS = $SAFETY


    def reorder_point(daily_use, lead_days):
        """Stock level at which to order: the use during the lead time plus safety stock."""
        return daily_use * (lead_days + SAFETY_DAYS)


    def order_quantity(on_hand, on_order, daily_use, lead_days, pack=$PACK):
        """Units to order now, in whole packs, enough for $COVER more days beyond the
        reorder point (0 while stock on hand and on order is above the reorder point)."""
        available = on_hand + on_order
        point = reorder_point(daily_use, lead_days)
        if available > point:
            return 0
        shortfall = point + daily_use * $COVER - available
        packs = (shortfall + pack - 1) // pack
        return packs * pack
    ''',
    params={"SAFETY": ("2", "3", "5"), "PACK": ("6", "10", "12"), "COVER": ("7", "14")},
    cases=_reorder_cases,
)


def _terms_cases(r: random.Random) -> list[Call]:
    texts = ("2/10 net 30", "Net 60", "1/15 NET 45", "net", "3/7 net 20", "2/10 n 30", "net 14")
    terms = (
        ("2/10 net 30", 10, 30),
        ("net 30", 0, 30),
        ("3/7 net 20", 7, 20),
        ("1/15 net 45", 15, 45),
    )

    def due() -> Call:
        text, window, net = r.choice(terms)
        day = r.choice((0, window, window + 1, net, net + 1, r.randint(0, 60)))
        return ("amount_due", (r.choice((10000, 2550, 999, r.randint(0, 90000))), text, day))

    return [*each(r, 5, lambda: ("parse_terms", (r.choice(texts),))), *each(r, 12, due)]


TERMS = Template(
    id="payment_terms",
    module="terms",
    source='''
    """Invoice payment terms like '2/10 net 30': 2 % off if paid within 10 days, due in 30."""


    def parse_terms(text):
        """'2/10 net 30' -> (2, 10, 30); 'net 30' -> (0, 0, 30)."""
        parts = text.lower().split()
        if len(parts) == 3 and parts[1] == "net":
            percent, days = parts[0].split("/")
            return int(percent), int(days), int(parts[2])
        if len(parts) == 2 and parts[0] == "net":
            return 0, 0, int(parts[1])
        raise ValueError(f"bad terms: {text!r}")


    def amount_due(cents, terms, days_after):
        """What to pay `days_after` the invoice date; a late payment adds $LATE % once."""
        percent, window, net = parse_terms(terms)
        if days_after <= window:
            return cents - cents * percent // 100
        if days_after > net:
            return cents + cents * $LATE // 100
        return cents
    ''',
    params={"LATE": ("1", "2", "5")},
    cases=_terms_cases,
)


def _loyalty_cases(r: random.Random) -> list[Call]:
    lifetime = (0, 499, 500, 999, 1000, 2500, 4999, 5000, 6000, r.randint(0, 9000))
    spend = (0, 99, 100, 1999, r.randint(0, 50000))
    return [
        *each(r, 4, lambda: ("tier", (r.choice(lifetime),))),
        *each(r, 10, lambda: ("earn", (r.choice(spend), r.choice(lifetime)))),
        *each(r, 4, lambda: ("redeem", (r.choice((0, 199, 200, 250, r.randint(0, 3000))),))),
    ]


LOYALTY = Template(
    id="loyalty_points",
    module="loyalty",
    source='''
    """Loyalty points: earned per whole unit spent, at a better rate for higher tiers."""

    TIERS = [(0, "bronze"), ($SILVER, "silver"), ($GOLD, "gold")]  # lifetime points needed


    def tier(lifetime_points):
        name = TIERS[0][1]
        for needed, tier_name in TIERS:
            if lifetime_points >= needed:
                name = tier_name
        return name


    def earn(spend_cents, lifetime_points):
        """Points for one purchase: 1 per whole unit, x2 for gold, +1 per 10 units for silver."""
        units = spend_cents // 100
        level = tier(lifetime_points)
        if level == "gold":
            return units * 2
        if level == "silver":
            return units + units // 10
        return units


    def redeem(points, cost=$COST):
        """(vouchers, points left) turning points into as many vouchers as possible."""
        return points // cost, points % cost
    ''',
    params={"SILVER": ("500", "1000"), "GOLD": ("2500", "5000"), "COST": ("250", "200")},
    cases=_loyalty_cases,
)


def _savings_cases(r: random.Random) -> list[Call]:
    cents = (0, 10000, 123456, 10**6)
    rates = (0, 100, 250, 500, 500)

    def goal() -> int:
        return r.choice((15000, 20000, 50000, 150000))

    return [
        *each(r, 7, lambda: ("grow", (r.choice(cents), r.choice(rates), r.choice((0, 1, 3, 10))))),
        ("grow", (r.choice(cents[1:]), r.choice((-5, 100)), r.choice((-1, 0)))),
        ("grow", (10000, r.choice((-5, 0)), r.choice((0, 2)))),
        ("grow", (r.choice(cents[1:]), r.choice(rates[1:]), 0)),
        ("years_to_reach", (r.choice((10000, 20000)), r.choice((0, 100)), 10000)),
        *each(
            r, 7, lambda: ("years_to_reach", (r.choice(cents[1:3]), r.choice(rates[1:]), goal()))
        ),
    ]


SAVINGS = Template(
    id="savings_growth",
    module="savings",
    source='''
    """Savings projections in whole cents, interest compounded yearly and rounded down."""


    def grow(cents, rate_bp, years):
        """The balance after `years` at `rate_bp` basis points a year (100 bp = 1 %)."""
        if years < 0 or rate_bp < 0:
            raise ValueError("negative years or rate")
        for _ in range(years):
            cents += cents * rate_bp // 10000
        return cents


    def years_to_reach(cents, rate_bp, goal, horizon=$HORIZON):
        """Whole years until the balance is at least `goal`; None if not within `horizon`."""
        if cents >= goal:
            return 0
        for year in range(1, horizon + 1):
            cents += cents * rate_bp // 10000
            if cents >= goal:
                return year
        return None
    ''',
    params={"HORIZON": ("30", "50", "100")},
    cases=_savings_cases,
)


def _payroll_cases(r: random.Random) -> list[Call]:
    def week(days: int = 7) -> list[int]:
        return [r.choice((0, 4, 8, 8, 10, 12)) for _ in range(days)]

    return [
        *each(r, 8, lambda: ("weekly_pay", (week(), r.choice((1000, 1525, 2001))))),
        ("weekly_pay", (week(r.choice((6, 8))), 1000)),
        *each(r, 6, lambda: ("overtime_hours", (week(),))),
    ]


PAYROLL = Template(
    id="payroll_overtime",
    module="payroll",
    source='''
    """Weekly pay in cents: time and a half past $LIMIT hours, double time on Sundays."""

    WEEK_LIMIT = $LIMIT


    def weekly_pay(hours_by_day, rate_cents):
        """`hours_by_day` holds seven whole-hour counts, Monday first."""
        if len(hours_by_day) != 7:
            raise ValueError("need seven days")
        regular = 0
        overtime = 0
        for hours in hours_by_day[:6]:
            room = max(WEEK_LIMIT - regular, 0)
            regular += min(hours, room)
            overtime += max(hours - room, 0)
        sunday = hours_by_day[6] * rate_cents * 2
        return regular * rate_cents + overtime * rate_cents * 3 // 2 + sunday


    def overtime_hours(hours_by_day):
        """Weekday hours past the weekly limit (Sunday hours never count)."""
        return max(sum(hours_by_day[:6]) - WEEK_LIMIT, 0)
    ''',
    params={"LIMIT": ("40", "37", "38")},
    cases=_payroll_cases,
)


def _parking_cases(r: random.Random) -> list[Call]:
    stays = (-5, 0, 10, 11, 15, 16, 60, 61, 119, 240, 1439, 1440, 1500, 3000, r.randint(0, 5000))
    return [
        *each(r, 12, lambda: ("fee", (r.choice(stays),))),
        *each(r, 6, lambda: ("total", ([r.randint(0, 600) for _ in range(r.randint(3, 12))],))),
    ]


PARKING = Template(
    id="parking_fees",
    module="parking",
    source='''
    """Car park charges: a free grace period, then per started hour, capped per day."""

    GRACE_MINUTES = $GRACE
    HOURLY = $HOURLY
    DAILY_CAP = $CAP


    def fee(minutes):
        """The charge in cents for one stay of `minutes`."""
        if minutes < 0:
            raise ValueError("negative stay")
        if minutes <= GRACE_MINUTES:
            return 0
        days, rest = divmod(minutes, 24 * 60)
        hours = (rest + 59) // 60
        return days * DAILY_CAP + min(hours * HOURLY, DAILY_CAP)


    def total(stays):
        """The sum of the fees of `stays`; every $NTH-th stay on the card is free."""
        return sum(fee(m) for i, m in enumerate(stays, 1) if i % $NTH)
    ''',
    params={
        "GRACE": ("10", "15"),
        "HOURLY": ("250", "300"),
        "CAP": ("1800", "2000"),
        "NTH": ("5", "10"),
    },
    cases=_parking_cases,
)


TEMPLATES = (LEDGER, ORDER, REORDER, TERMS, LOYALTY, SAVINGS, PAYROLL, PARKING)
