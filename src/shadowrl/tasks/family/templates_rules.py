"""Templates of rules and state: cache policies, a vending machine, tennis scoring, auctions,
shared expenses, budgets and layered settings."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Call, Template
from shadowrl.tasks.family.templates_text import each


def _trace(r: random.Random) -> list[str]:
    return [r.choice("abcab" if r.random() < 0.5 else "abcdea") for _ in range(r.randint(0, 9))]


CACHE = Template(
    id="cache_policies",
    module="cache_sim",
    source='''
    """Simulating cache policies on a trace of requested keys, to size the cache."""


    def lru(requests, capacity=$CAP):
        """(hits, keys held at the end, least recently used first) of an LRU cache."""
        if capacity < 1:
            raise ValueError("capacity must be positive")
        cache = []
        hits = 0
        for key in requests:
            if key in cache:
                hits += 1
                cache.remove(key)
            elif len(cache) >= capacity:
                cache.pop(0)
            cache.append(key)
        return hits, cache


    def fifo(requests, capacity=$CAP):
        """The same for first in, first out: a hit does not refresh the key."""
        if capacity < 1:
            raise ValueError("capacity must be positive")
        cache = []
        hits = 0
        for key in requests:
            if key in cache:
                hits += 1
                continue
            if len(cache) >= capacity:
                cache.pop(0)
            cache.append(key)
        return hits, cache


    def hit_rate(hits, total):
        """A whole percentage, rounded half up; 0 for no requests."""
        return (hits * 200 + total) // (total * 2) if total else 0
    ''',
    params={"CAP": ("2", "3", "4")},
    cases=lambda r: [
        *each(r, 6, lambda: ("lru", (_trace(r),) + (r.choice((0, 1, 2, 3)),) * (r.random() < 0.7))),
        *each(
            r, 6, lambda: ("fifo", (_trace(r),) + (r.choice((0, 1, 2, 3)),) * (r.random() < 0.6))
        ),
        *each(r, 4, lambda: ("hit_rate", (r.choice((0, 1, 2, 5)), r.choice((0, 3, 8, 10))))),
    ],
)


def _vend(r: random.Random) -> list[tuple[str, object]]:
    def event() -> tuple[str, object]:
        kind = r.choice(("coin", "coin", "coin", "select", "cancel"))
        if kind == "coin":
            return kind, r.choice((5, 10, 20, 50, 100, 100, 25))
        return kind, r.choice(("A1", "A2", "B1", "C9")) if kind == "select" else None

    return [event() for _ in range(r.randint(1, 8))]


BUY = [("coin", 100), ("coin", 20)]
PICK = (("select", "A1"), ("select", "B1"))

VENDING = Template(
    id="vending_machine",
    module="vending",
    source='''
    """A vending machine as a state machine: coins in, a product out, change back."""

    PRICES = {"A1": $A1, "A2": 120, "B1": $B1}
    COINS = (5, 10, 20, 50, 100)


    def run(events):
        """Feed ('coin', value), ('select', code) and ('cancel', None) events; returns
        (codes dispensed, change returned in total, credit left). Unknown coins are
        returned at once; a selection the credit does not cover is ignored."""
        credit = 0
        dispensed = []
        returned = 0
        for kind, value in events:
            if kind == "coin":
                if value in COINS:
                    credit += value
                else:
                    returned += value
            elif kind == "select":
                price = PRICES.get(value)
                if price is None or credit < price:
                    continue
                dispensed.append(value)
                returned += credit - price
                credit = 0
            elif kind == "cancel":
                returned += credit
                credit = 0
        return dispensed, returned, credit
    ''',
    params={"A1": ("80", "90", "100"), "B1": ("150", "175")},
    cases=lambda r: [
        *each(r, 12, lambda: ("run", (_vend(r),))),
        *each(r, 3, lambda: ("run", ([*BUY, ("coin", r.choice((50, 75))), r.choice(PICK)],))),
    ],
)


def _rally(r: random.Random) -> str:
    return "".join(r.choice("AB" if r.random() < 0.95 else "ABx") for _ in range(r.randint(0, 10)))


TENNIS = Template(
    id="tennis_score",
    module="tennis",
    source='''
    """Scoring a tennis game from the points won, in order, by 'A' or 'B'."""

    CALLS = ("$LOVE", "15", "30", "40")


    def game_score(points):
        """The umpire's call after `points`: '15-30', 'deuce', 'advantage A' or 'game B'."""
        a = b = 0
        for p in points:
            if p == "A":
                a += 1
            elif p == "B":
                b += 1
            else:
                raise ValueError(f"unknown player {p!r}")
            if (a >= 4 or b >= 4) and abs(a - b) >= 2:
                return "game " + p
        if a >= 3 and b >= 3:
            if a == b:
                return "$DEUCE"
            return "advantage " + ("A" if a > b else "B")
        return f"{CALLS[a]}-{CALLS[b]}"
    ''',
    params={"LOVE": ("0", "love"), "DEUCE": ("deuce", "Deuce")},
    cases=lambda r: [
        *each(r, 8, lambda: ("game_score", (_rally(r),))),
        *each(r, 8, lambda: ("game_score", (r.choice(("AAAB", "ABAB", "BBBA")) + _rally(r)[:4],))),
    ],
)


def _bids(r: random.Random) -> list[tuple[str, int]]:
    price = 0
    out = []
    for _ in range(r.randint(0, 6)):
        price += r.choice((-200, 0, 40, 50, 60, 100, 150, 400))
        out.append((r.choice(("ann", "bob", "cy")), max(price, 0) + 1000))
    return out


AUCTION = Template(
    id="silent_auction",
    module="auction",
    source='''
    """A silent auction: each bid must beat the standing one by a minimum step."""

    STEP_PERCENT = $STEP
    MIN_STEP = $MIN_STEP


    def next_minimum(price):
        """The lowest acceptable next bid: STEP_PERCENT % more, and at least MIN_STEP more."""
        return price + max(price * STEP_PERCENT // 100, MIN_STEP)


    def run(reserve, bids):
        """(winner, price) after the (bidder, amount) bids in order; a bid too low, or from
        the standing winner, is ignored; (None, 0) if no bid reached the reserve."""
        winner, price = None, 0
        for bidder, amount in bids:
            needed = reserve if winner is None else next_minimum(price)
            if amount < needed or bidder == winner:
                continue
            winner, price = bidder, amount
        return winner, price
    ''',
    params={"STEP": ("5", "10"), "MIN_STEP": ("100", "50")},
    cases=lambda r: [
        *each(r, 5, lambda: ("next_minimum", (r.choice((0, 500, 999, 1000, 2000, 2500)),))),
        *each(r, 10, lambda: ("run", (r.choice((0, 1000, 1100, 1300)), _bids(r)))),
    ],
)


def _settle_cases(r: random.Random) -> list[Call]:
    names = ("ann", "bob", "cy", "dee")

    def expense() -> tuple[str, int, list[str]]:
        cents = r.choice((100, 301, 999, r.randint(1, 9000)))
        return r.choice(names), cents, r.sample(names, r.randint(1, 4))

    def net() -> dict[str, int]:
        values = [r.choice((0, 40, 50, 99, 100, 150, 900)) for _ in range(3)]
        out = {name: -v for name, v in zip(names, values, strict=False)}
        out["dee"] = sum(values)
        return out if r.random() < 0.5 else {k: -v for k, v in out.items()}

    return [
        *each(r, 7, lambda: ("balances", ([expense() for _ in range(r.randint(1, 4))],))),
        *each(r, 9, lambda: ("settle", (net(),))),
    ]


SETTLE = Template(
    id="settle_up",
    module="settle",
    source='''
    """Who owes whom after a trip: net balances and the payments that settle them."""

    MIN_PAYMENT = $MIN  # smaller debts are forgiven


    def balances(expenses):
        """{person: cents paid minus share} from (payer, cents, people) records; shares are
        equal, the first people in the list paying the leftover cents."""
        net = {}
        for payer, cents, people in expenses:
            base, extra = divmod(cents, len(people))
            net[payer] = net.get(payer, 0) + cents
            for i, person in enumerate(people):
                net[person] = net.get(person, 0) - base - (1 if i < extra else 0)
        return net


    def settle(net):
        """Payments (from, to, cents): the biggest debtor first, paying creditors by name."""
        owed = [[value, name] for name, value in sorted(net.items()) if value > 0]
        payments = []
        for person, value in sorted(net.items(), key=lambda kv: kv[1]):
            debt = -value
            for creditor in owed:
                if debt <= 0:
                    break
                pay = min(debt, creditor[0])
                creditor[0] -= pay
                debt -= pay
                if pay >= MIN_PAYMENT:
                    payments.append((person, creditor[1], pay))
        return payments
    ''',
    params={"MIN": ("1", "50", "100")},
    cases=_settle_cases,
)


def _budget_cases(r: random.Random) -> list[Call]:
    def spends(cats: tuple[str, ...], amounts: tuple[int, ...]) -> list[tuple[str, int]]:
        return [(r.choice(cats), r.choice(amounts)) for _ in range(r.randint(0, 5))]

    def edge() -> Call:
        return "status", ({"food": 5000, "fun": r.choice((0, 100))}, [("food", r.choice(EDGES))])

    limits = {"food": 5000, "fun": 0, "rent": 9000}
    return [
        *each(
            r, 5, lambda: ("spent_by_category", (spends(("Food", "food ", "", "fun"), (-5, 99)),))
        ),
        *each(
            r, 5, lambda: ("status", (limits, spends(("Food", "fun", "rent ", "misc"), (-8, 4500))))
        ),
        *each(r, 6, edge),
    ]


EDGES = (0, 3749, 3750, 4000, 4499, 4500, 5000, 5001)

BUDGET = Template(
    id="budget_envelopes",
    module="budget",
    source='''
    """Envelope budgeting: spending tracked against a monthly limit per category."""

    WARN_PERCENT = $WARN


    def spent_by_category(transactions):
        """{category: cents} of (category, cents) spending; refunds are negative amounts."""
        out = {}
        for category, cents in transactions:
            key = category.strip().lower() or "$OTHER"
            out[key] = out.get(key, 0) + cents
        return out


    def status(limits, transactions):
        """{category: 'ok' | 'warn' | 'over'} for every category with a limit."""
        spent = spent_by_category(transactions)
        report = {}
        for category, limit in limits.items():
            used = spent.get(category, 0)
            if used > limit:
                report[category] = "over"
            elif used * 100 >= limit * WARN_PERCENT:
                report[category] = "warn"
            else:
                report[category] = "ok"
        return report
    ''',
    params={"WARN": ("80", "90", "75"), "OTHER": ("other", "misc")},
    cases=_budget_cases,
)


NESTED = {"a": {"c": 1, "d": [1, 2]}, "b": 2}
VALUES: tuple[object, ...] = (None, 1, 2, "on", [1], [2, 1], {"a": 1}, {"b": None}, {"a": {"c": 3}})


def _value(r: random.Random) -> object:
    return r.choice(VALUES)


def _layer(r: random.Random) -> dict[str, object]:
    return {k: _value(r) for k in r.sample("abx", r.randint(1, 3))}


TREE = {"a": {"c": 3, "d": {"e": 5}}, "b": 2}
KEYS = ("a.c", "a.d.e", "b", "b.c", "a.x", "a.d", "x")

CONFIG = Template(
    id="config_merge",
    module="layered_config",
    source='''
    """Layered settings: defaults, then the user's file, then command-line overrides."""


    def merge(base, override):
        """A new dict: nested dicts merged key by key, lists extended by the items they lack,
        other values replaced; None in `override` deletes the key."""
        out = dict(base)
        for key, value in override.items():
            if value is None:
                out.pop(key, None)
            elif isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge(out[key], value)
            elif isinstance(value, list) and isinstance(out.get(key), list):
                out[key] = out[key] + [v for v in value if v not in out[key]]
            else:
                out[key] = value
        return out


    def lookup(config, dotted, default=$DEFAULT):
        """config['a']['b'] for 'a${DOT}b', or `default` if any part is missing."""
        node = config
        for part in dotted.split("$DOT"):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node
    ''',
    params={"DEFAULT": ("None", "0", "''"), "DOT": (".", "/")},
    cases=lambda r: [
        *each(r, 7, lambda: ("merge", (_layer(r), _layer(r)))),
        *each(r, 3, lambda: ("merge", (NESTED, {"a": {"c": r.choice((2, None)), "d": _value(r)}}))),
        *each(r, 6, lambda: ("lookup", (TREE, r.choice(KEYS).replace(".", r.choice("./"))))),
    ],
)


TEMPLATES = (CACHE, VENDING, TENNIS, AUCTION, SETTLE, BUDGET, CONFIG)
