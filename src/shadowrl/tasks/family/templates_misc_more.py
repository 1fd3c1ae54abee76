"""Templates of everyday checks and tallies: emails, passwords, ISBNs, votes, change (continued)."""

from __future__ import annotations

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_misc import pick
from shadowrl.tasks.family.templates_text import each

CHANGE = Template(
    id="making_change",
    module="change",
    source='''
    """Change from the vending machine, in the fewest coins."""

    COINS = ($BIG, 50, 20, 10, 5, 2, 1)


    def greedy_change(amount):
        """{coin: count} taking the largest coin first (optimal for these coins)."""
        if amount < 0:
            raise ValueError("negative amount")
        out = {}
        for coin in COINS:
            if amount >= coin:
                out[coin] = amount // coin
                amount %= coin
        return out


    def fewest_coins(amount, coins):
        """Fewest coins from `coins` summing to amount, or -1 (dynamic programming)."""
        best = [0] + [-1] * amount
        for value in range(1, amount + 1):
            options = [best[value - c] for c in coins if c <= value and best[value - c] >= 0]
            best[value] = min(options) + 1 if options else -1
        return best[amount]
    ''',
    params={"BIG": ("100", "200")},
    cases=lambda r: [
        *each(
            r,
            7,
            lambda: ("greedy_change", (r.choice((-1, 0, 1, 3, 8, 99, 288, r.randint(0, 500))),)),
        ),
        *each(
            r,
            7,
            lambda: (
                "fewest_coins",
                (r.randint(0, 30), r.choice(([1, 5, 10], [2, 5], [3, 7], [1, 3, 4], [5]))),
            ),
        ),
    ],
)

PACE = Template(
    id="running_pace",
    module="pace",
    source='''
    """Running pace and finish times for the training log."""


    def pace(seconds, metres):
        """Seconds per kilometre, rounded down; ValueError for no distance."""
        if metres <= 0:
            raise ValueError("distance must be positive")
        return seconds * 1000 // metres


    def format_time(seconds):
        """'m:ss' under an hour, 'h:mm:ss' from an hour."""
        hours, rest = divmod(seconds, 3600)
        minutes, secs = divmod(rest, 60)
        if hours:
            return f"{hours}:{minutes:02d}:{secs:02d}"
        return f"{minutes}:{secs:02d}"


    def finish_time(pace_s_per_km, metres):
        return format_time(pace_s_per_km * metres // 1000)
    ''',
    cases=lambda r: [
        *each(
            r,
            5,
            lambda: (
                "pace",
                (r.randint(600, 20000), r.choice((0, 1000, 5000, 10000, 21097, 42195))),
            ),
        ),
        *each(
            r,
            5,
            lambda: (
                "format_time",
                (r.choice((0, 59, 60, 3599, 3600, 3661, r.randint(0, 20000))),),
            ),
        ),
        *each(
            r,
            4,
            lambda: ("finish_time", (r.randint(180, 480), r.choice((1000, 5000, 10000, 42195)))),
        ),
    ],
)

VOTES = Template(
    id="vote_tally",
    module="votes",
    source='''
    """Tallying the club's votes: plurality, with a quorum."""

    QUORUM = $QUORUM


    def tally(ballots):
        """{option: votes}, blank ballots ignored, options in first-seen order."""
        out = {}
        for ballot in ballots:
            choice = ballot.strip().lower()
            if choice:
                out[choice] = out.get(choice, 0) + 1
        return out


    def winner(ballots):
        """The option with most votes (None on a tie or without quorum)."""
        counts = tally(ballots)
        if sum(counts.values()) < QUORUM:
            return None
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return None
        return ranked[0][0]
    ''',
    params={"QUORUM": ("3", "4")},
    cases=lambda r: [
        *each(
            r,
            6,
            lambda: (
                "tally",
                ([pick(r, "Tea", "tea ", "coffee", "", "Juice") for _ in range(r.randint(0, 6))],),
            ),
        ),
        *each(
            r,
            8,
            lambda: (
                "winner",
                ([pick(r, "tea", "Tea", "coffee", " ", "juice") for _ in range(r.randint(0, 7))],),
            ),
        ),
    ],
)

BARS = Template(
    id="text_histogram",
    module="histogram",
    source='''
    """Text bar charts for the CLI report."""


    def bar(value, maximum, width=$WIDTH, char="$CHAR"):
        """A bar of `width` cells scaled to `maximum`, rounded to the nearest cell."""
        if maximum <= 0:
            return ""
        cells = (value * width * 2 + maximum) // (maximum * 2)
        return char * max(0, min(cells, width))


    def chart(counts, width=$WIDTH):
        """One line per (label, count): labels padded to the longest one."""
        if not counts:
            return []
        pad = max(len(label) for label, _ in counts)
        top = max(count for _, count in counts)
        return [f"{label.ljust(pad)} | {bar(count, top, width)}" for label, count in counts]
    ''',
    params={"WIDTH": ("10", "20"), "CHAR": ("#", "*")},
    cases=lambda r: [
        *each(r, 7, lambda: ("bar", (r.randint(0, 40), r.choice((0, 1, 7, 40))))),
        *each(
            r,
            7,
            lambda: (
                "chart",
                ([(pick(r, "a", "bb", "ccc"), r.randint(0, 9)) for _ in range(r.randint(0, 3))],),
            ),
        ),
    ],
)


TEMPLATES = (CHANGE, PACE, VOTES, BARS)
