"""Templates of small algorithms: searching, edit distance, primes, windows, stacks."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_collections import ints
from shadowrl.tasks.family.templates_text import each


def word(r: random.Random, letters: str = "abc", hi: int = 6) -> str:
    return "".join(r.choice(letters) for _ in range(r.randint(0, hi)))


BISECT = Template(
    id="binary_search",
    module="search",
    source='''
    """Binary search over sorted price lists."""


    def lower_bound(items, target):
        """The first index whose item is >= target (len(items) if none)."""
        lo, hi = 0, len(items)
        while lo < hi:
            mid = (lo + hi) // 2
            if items[mid] < target:
                lo = mid + 1
            else:
                hi = mid
        return lo


    def contains(items, target):
        i = lower_bound(items, target)
        return i < len(items) and items[i] == target


    def count_in_range(items, low, high):
        """How many items are in [low, high]."""
        return lower_bound(items, high + 1) - lower_bound(items, low)
    ''',
    cases=lambda r: [
        *each(r, 5, lambda: ("lower_bound", (sorted(ints(r, 0, 9)), r.randint(-4, 22)))),
        *each(r, 5, lambda: ("contains", (sorted(ints(r, 0, 9)), r.randint(-4, 22)))),
        *each(
            r,
            4,
            lambda: ("count_in_range", (sorted(ints(r, 0, 9)), r.randint(-2, 8), r.randint(6, 20))),
        ),
    ],
)

LEVENSHTEIN = Template(
    id="edit_distance",
    module="fuzzy",
    source='''
    """Fuzzy matching for the search box: edit distance and the closest command."""


    def distance(a, b):
        """Insertions, deletions and substitutions to turn `a` into `b`."""
        previous = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            current = [i]
            for j, cb in enumerate(b, 1):
                cost = 0 if ca == cb else 1
                current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
            previous = current
        return previous[-1]


    def closest(word, choices, limit=$LIMIT):
        """The choice nearest to `word` within `limit` edits (the first on ties), or None."""
        best, best_d = None, limit + 1
        for choice in choices:
            d = distance(word, choice)
            if d < best_d:
                best, best_d = choice, d
        return best
    ''',
    params={"LIMIT": ("2", "3")},
    cases=lambda r: [
        *each(r, 8, lambda: ("distance", (word(r), word(r)))),
        *each(
            r,
            6,
            lambda: (
                "closest",
                (word(r, "abc", 5), [word(r, "abc", 5) for _ in range(r.randint(0, 4))]),
            ),
        ),
    ],
)

PRIMES = Template(
    id="primes",
    module="primes",
    source='''
    """Primes for the maths homework helper."""


    def is_prime(n):
        if n < 2:
            return False
        d = 2
        while d * d <= n:
            if n % d == 0:
                return False
            d += 1
        return True


    def primes_up_to(n):
        """Sieve of Eratosthenes: the primes <= n."""
        if n < 2:
            return []
        sieve = [True] * (n + 1)
        sieve[0] = sieve[1] = False
        for i in range(2, int(n**0.5) + 1):
            if sieve[i]:
                for j in range(i * i, n + 1, i):
                    sieve[j] = False
        return [i for i, p in enumerate(sieve) if p]


    def factorize(n):
        """Prime factors of n >= 2 in ascending order, with repeats."""
        out, d = [], 2
        while n > 1:
            while n % d == 0:
                out.append(d)
                n //= d
            d += 1
        return out
    ''',
    cases=lambda r: [
        *each(
            r,
            5,
            lambda: (
                "is_prime",
                (r.choice((0, 1, 2, 3, 4, 9, 25, 49, 97, 121, r.randint(0, 500))),),
            ),
        ),
        *each(r, 4, lambda: ("primes_up_to", (r.choice((0, 1, 2, 10, 30, r.randint(0, 60))),))),
        *each(r, 5, lambda: ("factorize", (r.choice((2, 12, 49, 97, 360, r.randint(2, 3000))),))),
    ],
)

BRACKETS = Template(
    id="balanced_brackets",
    module="brackets",
    source='''
    """Checking brackets in the formula editor."""

    PAIRS = {")": "(", "]": "[", "}": "{"}


    def first_error(text):
        """Index of the first unmatched bracket, or -1 when all are balanced."""
        stack = []
        for i, ch in enumerate(text):
            if ch in "([{":
                stack.append(i)
            elif ch in PAIRS:
                if not stack or text[stack[-1]] != PAIRS[ch]:
                    return i
                stack.pop()
        return stack[0] if stack else -1


    def is_balanced(text):
        return first_error(text) == -1


    def max_nesting(text):
        depth = best = 0
        for ch in text:
            if ch in "([{":
                depth += 1
                best = max(best, depth)
            elif ch in PAIRS:
                depth -= 1
        return best
    ''',
    cases=lambda r: [
        *each(r, 6, lambda: ("first_error", (word(r, "()[]{}x", 8),))),
        *each(
            r,
            4,
            lambda: ("is_balanced", (r.choice(("(a[b]{c})", "([)]", "((", "", "x)", "{[()()]}")),)),
        ),
        *each(r, 4, lambda: ("max_nesting", (word(r, "(()[]{", 8),))),
    ],
)

WINDOW = Template(
    id="moving_average",
    module="smoothing",
    source='''
    """Smoothing sensor readings with a moving window (integers, rounded down)."""


    def moving_average(values, width=$WIDTH):
        """Average of each full window of `width` consecutive values."""
        if width <= 0:
            raise ValueError("width must be positive")
        out = []
        total = sum(values[:width])
        for i in range(width, len(values) + 1):
            if i > width:
                total += values[i - 1] - values[i - 1 - width]
            out.append(total // width)
        return out


    def peaks(values):
        """Indices of values strictly greater than both neighbours."""
        return [i for i in range(1, len(values) - 1) if values[i - 1] < values[i] > values[i + 1]]
    ''',
    params={"WIDTH": ("2", "3", "4")},
    cases=lambda r: [
        *each(r, 8, lambda: ("moving_average", (ints(r, 0, 9, 50), r.randint(0, 4)))),
        *each(r, 6, lambda: ("peaks", (ints(r, 0, 9, 6),))),
    ],
)


TEMPLATES = (BISECT, LEVENSHTEIN, PRIMES, BRACKETS, WINDOW)
