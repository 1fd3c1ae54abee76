"""Templates of small algorithms: searching, edit distance, primes, windows, stacks (continued)."""

from __future__ import annotations

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_algorithms import word
from shadowrl.tasks.family.templates_collections import ints
from shadowrl.tasks.family.templates_text import each

PREFIX = Template(
    id="common_prefix",
    module="prefixes",
    source='''
    """Prefixes for the autocomplete index."""


    def common_prefix(words):
        if not words:
            return ""
        prefix = words[0]
        for w in words[1:]:
            i = 0
            while i < min(len(prefix), len(w)) and prefix[i] == w[i]:
                i += 1
            prefix = prefix[:i]
        return prefix


    def complete(prefix, words, limit=$LIMIT):
        """Up to `limit` words starting with `prefix`, shortest first, then alphabetical."""
        found = [w for w in words if w.startswith(prefix)]
        return sorted(found, key=lambda w: (len(w), w))[:limit]
    ''',
    params={"LIMIT": ("3", "2")},
    cases=lambda r: [
        *each(
            r, 7, lambda: ("common_prefix", ([word(r, "ab", 5) for _ in range(r.randint(0, 4))],))
        ),
        *each(
            r,
            7,
            lambda: (
                "complete",
                (word(r, "ab", 2), [word(r, "ab", 5) for _ in range(r.randint(0, 6))]),
            ),
        ),
    ],
)

ANAGRAMS = Template(
    id="anagrams",
    module="anagrams",
    source='''
    """Anagram helpers for the word-puzzle page."""


    def signature(word):
        return "".join(sorted(word.lower().replace(" ", "")))


    def is_anagram(a, b):
        return a != b and signature(a) == signature(b)


    def groups(words, min_size=$MIN):
        """Groups of anagrams (in first-seen order) with at least `min_size` words."""
        by_sig = {}
        for w in words:
            by_sig.setdefault(signature(w), []).append(w)
        return [g for g in by_sig.values() if len(g) >= min_size]
    ''',
    params={"MIN": ("2",)},
    cases=lambda r: [
        *each(
            r,
            7,
            lambda: (
                "is_anagram",
                (
                    r.choice(("listen", "silent", "Tinsel", "abc", "cab", "ab c")),
                    r.choice(("enlist", "silent", "bca", "abc", "cba ", "xyz")),
                ),
            ),
        ),
        *each(
            r,
            7,
            lambda: (
                "groups",
                (
                    [
                        r.choice(("ab", "ba", "abc", "cab", "x", "bca", "AB"))
                        for _ in range(r.randint(0, 6))
                    ],
                ),
            ),
        ),
    ],
)

TWO_SUM = Template(
    id="pair_sums",
    module="pairs",
    source='''
    """Finding pairs of payments that add up to an invoice total."""


    def two_sum(amounts, total):
        """Indices (i, j), i < j, of the first pair found scanning j; None if no pair."""
        seen = {}
        for j, x in enumerate(amounts):
            need = total - x
            if need in seen:
                return seen[need], j
            if x not in seen:
                seen[x] = j
        return None


    def count_pairs(amounts, total):
        """Pairs i < j with amounts[i] + amounts[j] == total."""
        count = 0
        for i in range(len(amounts)):
            for j in range(i + 1, len(amounts)):
                if amounts[i] + amounts[j] == total:
                    count += 1
        return count
    ''',
    cases=lambda r: [
        *each(r, 7, lambda: ("two_sum", (ints(r, 0, 8, 9), r.randint(-2, 16)))),
        *each(r, 7, lambda: ("count_pairs", (ints(r, 0, 8, 6), r.randint(-2, 10)))),
    ],
)

NUMBER_WORDS = Template(
    id="number_words",
    module="spell",
    source='''
    """Writing amounts in words on cheques (0 to 999999)."""

    ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
    TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


    def below_thousand(n):
        if n < 20:
            return ONES[n]
        if n < 100:
            return TENS[n // 10] + ("" if n % 10 == 0 else "-" + ONES[n % 10])
        rest = n % 100
        head = ONES[n // 100] + " hundred"
        return head if rest == 0 else head + " and " + below_thousand(rest)


    def spell(n):
        if not 0 <= n < 1000000:
            raise ValueError("out of range")
        thousands, rest = divmod(n, 1000)
        if thousands == 0:
            return below_thousand(rest)
        head = below_thousand(thousands) + " thousand"
        if rest == 0:
            return head
        return head + (" and " if rest < 100 else " ") + below_thousand(rest)
    ''',
    cases=lambda r: each(
        r,
        14,
        lambda: (
            "spell",
            (
                r.choice(
                    (
                        0,
                        7,
                        13,
                        20,
                        40,
                        99,
                        100,
                        101,
                        110,
                        999,
                        1000,
                        1005,
                        21000,
                        1000000,
                        -1,
                        r.randint(0, 999999),
                        r.randint(0, 999),
                    )
                ),
            ),
        ),
    ),
)


TEMPLATES = (PREFIX, ANAGRAMS, TWO_SUM, NUMBER_WORDS)
