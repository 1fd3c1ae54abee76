"""Templates of everyday checks and tallies: emails, passwords, ISBNs, votes, change."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each


def pick(r: random.Random, *options: str) -> str:
    return r.choice(options)


EMAIL = Template(
    id="email_check",
    module="emails",
    source='''
    """A light email check for the sign-up form (not RFC 5322, on purpose)."""


    def is_valid(address):
        if address.count("@") != 1:
            return False
        local, domain = address.split("@")
        if not local or len(local) > $MAXLOCAL:
            return False
        if "." not in domain or domain.startswith(".") or domain.endswith("."):
            return False
        return all(ch.isalnum() or ch in "._-+" for ch in local + domain)


    def domain_of(address):
        if not is_valid(address):
            raise ValueError(f"not an email: {address!r}")
        return address.split("@")[1].lower()
    ''',
    params={"MAXLOCAL": ("64", "32")},
    cases=lambda r: [
        *each(
            r,
            9,
            lambda: (
                "is_valid",
                (
                    pick(
                        r,
                        "a@b.co",
                        "ab.c",
                        "a@@b.co",
                        "@b.co",
                        "a@b",
                        "a@.b.co",
                        "x_y+z@Mail.ORG",
                        "a b@c.de",
                        "a@b.co.",
                        "first.last@host.example",
                    ),
                ),
            ),
        ),
        *each(r, 5, lambda: ("domain_of", (pick(r, "a@B.Co", "bad", "x@Example.COM", "q@h"),))),
    ],
)

PASSWORD = Template(
    id="password_strength",
    module="passwords",
    source='''
    """Password strength meter for the account page: a score from 0 to 4."""

    MIN_LENGTH = $MIN


    def classes(password):
        """How many of lower, upper, digit and other characters appear."""
        checks = [str.islower, str.isupper, str.isdigit]
        found = [any(check(ch) for ch in password) for check in checks]
        found.append(any(not ch.isalnum() for ch in password))
        return sum(found)


    def score(password):
        if len(password) < MIN_LENGTH:
            return 0
        points = classes(password) - 1
        if len(password) >= 2 * MIN_LENGTH:
            points += 1
        return max(0, min(points, 4))


    def label(password):
        return ["too weak", "weak", "fair", "good", "strong"][score(password)]
    ''',
    params={"MIN": ("8", "6")},
    cases=lambda r: [
        *each(r, 4, lambda: ("classes", (pw(r),))),
        *each(r, 6, lambda: ("score", (pw(r),))),
        *each(r, 4, lambda: ("label", (pw(r),))),
    ],
)


def pw(r: random.Random) -> str:
    return "".join(r.choice("aZ9!bQ3 x") for _ in range(r.randint(3, 18)))


ISBN = Template(
    id="isbn",
    module="isbn",
    source='''
    """ISBN checks for the library catalogue."""


    def isbn10_valid(code):
        chars = code.replace("-", "")
        if len(chars) != 10:
            return False
        total = 0
        for i, ch in enumerate(chars):
            if ch == "X" and i == 9:
                value = 10
            elif ch.isdigit():
                value = int(ch)
            else:
                return False
            total += (10 - i) * value
        return total % 11 == 0


    def isbn13_valid(code):
        digits = [int(ch) for ch in code if ch.isdigit()]
        if len(digits) != 13:
            return False
        total = sum(d * (3 if i % 2 else 1) for i, d in enumerate(digits))
        return total % 10 == 0
    ''',
    cases=lambda r: [
        *each(
            r,
            7,
            lambda: (
                "isbn10_valid",
                (
                    pick(
                        r,
                        "0-306-40615-2",
                        "0306406153",
                        "080442957X",
                        "123456789X",
                        "12345",
                        "0-8044-2957-X",
                        "X123456788",
                    ),
                ),
            ),
        ),
        *each(
            r,
            7,
            lambda: (
                "isbn13_valid",
                (
                    pick(
                        r,
                        "978-0-306-40615-7",
                        "9780306406158",
                        "978030640615",
                        "978-1-86197-876-9",
                        "9781861978769",
                        "0000000000000",
                    ),
                ),
            ),
        ),
    ],
)

BOOLS = Template(
    id="parse_flags",
    module="flags",
    source='''
    """Reading yes/no flags from environment-style strings."""

    TRUE = {"1", "true", "yes", "y", "on"}
    FALSE = {"0", "false", "no", "n", "off", ""}


    def parse_flag(text, default=None):
        value = text.strip().lower()
        if value in TRUE:
            return True
        if value in FALSE:
            return False
        if default is not None:
            return default
        raise ValueError(f"not a flag: {text!r}")


    def parse_flags(text):
        """'a=yes,b=0' -> {'a': True, 'b': False}."""
        out = {}
        for item in text.split("$SEP"):
            if not item.strip():
                continue
            name, _, value = item.partition("=")
            out[name.strip()] = parse_flag(value)
        return out
    ''',
    params={"SEP": (",", ";")},
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: (
                "parse_flag",
                (
                    pick(r, "Yes", " on ", "0", "", "maybe", "N", "TRUE", "2"),
                    r.choice((None, None, True, False)),
                ),
            ),
        ),
        *each(
            r,
            6,
            lambda: (
                "parse_flags",
                (
                    r.choice((",", ";")).join(
                        f"{k}={pick(r, 'yes', '0', 'off', 'y', 'x')}"
                        for k in r.sample("abcd", r.randint(0, 3))
                    ),
                ),
            ),
        ),
    ],
)

BUCKET = Template(
    id="rate_limiter",
    module="ratelimit",
    source='''
    """A token-bucket rate limiter, replayed over request timestamps (seconds)."""


    def allowed(times, capacity=$CAP, refill_per_s=1):
        """Whether each request (times ascending) is let through."""
        tokens = capacity
        last = None
        out = []
        for t in times:
            if last is not None:
                tokens = min(capacity, tokens + (t - last) * refill_per_s)
            last = t
            if tokens >= 1:
                tokens -= 1
                out.append(True)
            else:
                out.append(False)
        return out


    def rejected(times, capacity=$CAP):
        return sum(not ok for ok in allowed(times, capacity))
    ''',
    params={"CAP": ("2", "3")},
    cases=lambda r: [
        *each(
            r, 8, lambda: ("allowed", (sorted(r.randint(0, 6) for _ in range(r.randint(0, 8))),))
        ),
        *each(
            r,
            6,
            lambda: (
                "rejected",
                (sorted(r.randint(0, 5) for _ in range(r.randint(0, 9))), r.randint(1, 3)),
            ),
        ),
    ],
)


TEMPLATES = (EMAIL, PASSWORD, ISBN, BOOLS, BUCKET)
