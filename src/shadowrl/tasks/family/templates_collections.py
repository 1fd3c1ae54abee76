"""Templates of collections: chunking, grouping, paging, merging, dedupe, inventories."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each


def ints(r: random.Random, lo: int = 0, hi: int = 8, top: int = 20) -> list[int]:
    return [r.randint(-3, top) for _ in range(r.randint(lo, hi))]


CHUNK = Template(
    id="chunking",
    module="batching",
    source='''
    """Cutting work lists into batches for the job queue."""


    def chunks(items, size=$SIZE):
        """Consecutive lists of `size` items; the last may be shorter."""
        if size < 1:
            raise ValueError("size must be at least 1")
        return [items[i : i + size] for i in range(0, len(items), size)]


    def balanced(items, parts):
        """`parts` lists whose lengths differ by at most one, in order."""
        base, extra = divmod(len(items), parts)
        out = []
        start = 0
        for i in range(parts):
            end = start + base + (1 if i < extra else 0)
            out.append(items[start:end])
            start = end
        return out
    ''',
    params={"SIZE": ("3", "4", "5")},
    cases=lambda r: [
        *each(r, 7, lambda: ("chunks", (ints(r, 0, 11), r.randint(0, 5)))),
        *each(r, 7, lambda: ("balanced", (ints(r, 0, 11), r.randint(1, 5)))),
    ],
)

GROUP = Template(
    id="group_by",
    module="grouping",
    source='''
    """Grouping records for the report page."""


    def group_by(rows, key):
        """{value of `key`: [rows]} with groups and rows in first-seen order."""
        out = {}
        for row in rows:
            out.setdefault(row[key], []).append(row)
        return out


    def count_by(rows, key):
        return {k: len(v) for k, v in group_by(rows, key).items()}


    def top(rows, key, n=$TOP):
        """The `n` most common values of `key`, ties broken by first appearance."""
        counts = count_by(rows, key)
        order = list(counts)
        return sorted(order, key=lambda k: (-counts[k], order.index(k)))[:n]
    ''',
    params={"TOP": ("2", "3")},
    cases=lambda r: [
        *each(r, 4, lambda: ("group_by", (rows(r), "team"))),
        *each(r, 5, lambda: ("count_by", (rows(r), r.choice(("team", "role"))))),
        *each(r, 5, lambda: ("top", (rows(r), r.choice(("team", "role"))))),
    ],
)


def rows(r: random.Random) -> list[dict[str, str]]:
    return [
        {"team": r.choice("abc"), "role": r.choice(("dev", "ops", "qa"))}
        for _ in range(r.randint(0, 7))
    ]


PAGES = Template(
    id="pagination",
    module="paging",
    source='''
    """Pagination for list endpoints: pages numbered from 1."""


    def page_count(total, per_page=$PER):
        if total <= 0:
            return 1
        return (total + per_page - 1) // per_page


    def page(items, number, per_page=$PER):
        """Items of page `number`; ValueError outside 1..page_count."""
        if number < 1 or number > page_count(len(items), per_page):
            raise ValueError(f"no page {number}")
        start = (number - 1) * per_page
        return items[start : start + per_page]


    def window(number, pages, width=$WIDTH):
        """Page numbers to show around `number`, clamped to 1..pages."""
        low = max(1, number - width)
        high = min(pages, number + width)
        return list(range(low, high + 1))
    ''',
    params={"PER": ("3", "5"), "WIDTH": ("1", "2")},
    cases=lambda r: [
        *each(r, 4, lambda: ("page_count", (r.randint(-1, 30),))),
        *each(r, 6, lambda: ("page", (list(range(r.randint(0, 17))), r.randint(0, 5)))),
        *each(r, 4, lambda: ("window", (r.randint(1, 9), r.randint(1, 9)))),
    ],
)

MERGE = Template(
    id="merge_sorted",
    module="merging",
    source='''
    """Merging sorted feeds into one timeline."""


    def merge(a, b):
        """One sorted list from two sorted lists; on ties, `a` first."""
        out = []
        i = j = 0
        while i < len(a) and j < len(b):
            if a[i] <= b[j]:
                out.append(a[i])
                i += 1
            else:
                out.append(b[j])
                j += 1
        out.extend(a[i:])
        out.extend(b[j:])
        return out


    def merge_all(lists):
        result = []
        for part in lists:
            result = merge(result, part)
        return result


    def dedupe_sorted(items):
        return [x for i, x in enumerate(items) if i == 0 or items[i - 1] != x]
    ''',
    cases=lambda r: [
        *each(r, 6, lambda: ("merge", (sorted(ints(r)), sorted(ints(r))))),
        *each(
            r, 4, lambda: ("merge_all", ([sorted(ints(r, 0, 4)) for _ in range(r.randint(0, 3))],))
        ),
        *each(r, 4, lambda: ("dedupe_sorted", (sorted(ints(r, 0, 9, 5)),))),
    ],
)

UNIQUE = Template(
    id="dedupe_keep_order",
    module="dedupe",
    source='''
    """Removing duplicate contacts while keeping the order people entered them."""


    def unique(items, key=None):
        """First occurrence of each item (or of each key(item))."""
        seen = set()
        out = []
        for item in items:
            marker = item if key is None else key(item)
            if marker in seen:
                continue
            seen.add(marker)
            out.append(item)
        return out


    def unique_emails(emails):
        """Case-insensitive, ignoring surrounding spaces; keeps the first spelling."""
        return [e.strip() for e in unique(emails, key=lambda e: e.strip().lower())]


    def duplicates(items):
        """Items that occur more than once, in order of their second occurrence."""
        seen, out = set(), []
        for item in items:
            if item in seen and item not in out:
                out.append(item)
            seen.add(item)
        return out
    ''',
    cases=lambda r: [
        *each(r, 5, lambda: ("unique", (ints(r, 0, 9, 6),))),
        *each(
            r,
            5,
            lambda: (
                "unique_emails",
                (
                    [
                        r.choice(("a@x.io", "A@x.io ", " b@y.com", "B@Y.com", "c@z.org"))
                        for _ in range(r.randint(0, 5))
                    ],
                ),
            ),
        ),
        *each(r, 4, lambda: ("duplicates", (ints(r, 0, 9, 5),))),
    ],
)


TEMPLATES = (CHUNK, GROUP, PAGES, MERGE, UNIQUE)
