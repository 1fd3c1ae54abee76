"""Templates of text handling: slugs, case conversion, wrapping, ciphers, compression."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Call, Template

WORDS = ("alpha", "Beta", "gamma", "Delta", "the", "of", "and", "river", "Stone", "x", "a", "in")


def words(r: random.Random, lo: int = 1, hi: int = 5) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(lo, hi)))


def each(r: random.Random, n: int, make: object) -> list[Call]:
    return [make() for _ in range(n)]  # type: ignore[operator]


SLUG = Template(
    id="slugify",
    module="slugs",
    source='''
    """URL slugs for article titles."""


    def slugify(title, max_length=$MAX):
        """Lower-case words of `title` joined by '$SEP', at most `max_length` chars."""
        out = []
        for word in title.split():
            clean = "".join(ch for ch in word.lower() if ch.isalnum())
            if not clean:
                continue
            out.append(clean)
        slug = "$SEP".join(out)
        if len(slug) > max_length:
            slug = slug[:max_length].rstrip("$SEP")
        return slug
    ''',
    params={"MAX": ("20", "24", "30"), "SEP": ("-", "_")},
    cases=lambda r: each(r, 14, lambda: ("slugify", (words(r, 1, 7) + r.choice(("", "!", " ?")),))),
)

SNAKE = Template(
    id="camel_to_snake",
    module="naming",
    source='''
    """Converting identifiers between camelCase and snake_case."""


    def camel_to_snake(name):
        """'parseHTTPResponse' -> 'parse_http_response'."""
        out = []
        for i, ch in enumerate(name):
            if ch.isupper():
                prev_lower = i > 0 and name[i - 1].islower()
                next_lower = i + 1 < len(name) and name[i + 1].islower()
                if i > 0 and (prev_lower or next_lower) and out[-1] != "_":
                    out.append("_")
                out.append(ch.lower())
            else:
                out.append(ch)
        return "".join(out)


    def snake_to_camel(name, upper_first=$UPPER):
        """'parse_http_response' -> 'parseHttpResponse'."""
        parts = [p for p in name.split("_") if p]
        if not parts:
            return ""
        head = parts[0].capitalize() if upper_first else parts[0].lower()
        return head + "".join(p.capitalize() for p in parts[1:])
    ''',
    params={"UPPER": ("False", "True")},
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: (
                "camel_to_snake",
                (
                    r.choice(("get", "parse", "x"))
                    + "".join(
                        r.choice(("Name", "HTTP", "Id", "Value", "URL", "A", "b"))
                        for _ in range(r.randint(1, 3))
                    ),
                ),
            ),
        ),
        *each(
            r,
            6,
            lambda: (
                "snake_to_camel",
                (
                    "_".join(
                        r.choice(("user", "id", "http", "", "max", "value"))
                        for _ in range(r.randint(1, 4))
                    ),
                ),
            ),
        ),
    ],
)

WRAP = Template(
    id="word_wrap",
    module="wrapping",
    source='''
    """Greedy word wrapping for terminal output."""


    def wrap(text, width=$WIDTH):
        """Lines of at most `width` characters; a longer word gets a line of its own."""
        lines = []
        current = ""
        for word in text.split():
            if not current:
                current = word
            elif len(current) + 1 + len(word) <= width:
                current += " " + word
            else:
                lines.append(current)
                current = word
        if current:
            lines.append(current)
        return lines


    def line_count(text, width=$WIDTH):
        """How many lines `wrap` makes of `text`."""
        return len(wrap(text, width))
    ''',
    params={"WIDTH": ("10", "12", "16")},
    cases=lambda r: [
        *each(r, 10, lambda: ("wrap", (words(r, 1, 9),))),
        *each(r, 4, lambda: ("line_count", (words(r, 2, 12),))),
    ],
)

CAESAR = Template(
    id="caesar",
    module="cipher",
    source='''
    """The Caesar cipher, for the puzzle page."""

    ALPHABET = $LEN


    def shift_char(ch, key):
        """Shift one letter by `key` places, keeping its case; other characters unchanged."""
        if not ch.isalpha() or not ch.isascii():
            return ch
        base = ord("a") if ch.islower() else ord("A")
        return chr(base + (ord(ch) - base + key) % ALPHABET)


    def encrypt(text, key=$KEY):
        return "".join(shift_char(ch, key) for ch in text)


    def decrypt(text, key=$KEY):
        return "".join(shift_char(ch, -key) for ch in text)
    ''',
    params={"LEN": ("26",), "KEY": ("3", "5", "11")},
    cases=lambda r: [
        *each(
            r,
            7,
            lambda: ("encrypt", (words(r, 1, 3) + r.choice(("", "!", " 42")), r.randint(1, 30))),
        ),
        *each(r, 7, lambda: ("decrypt", (words(r, 1, 3), r.randint(0, 25)))),
    ],
)

RLE = Template(
    id="run_length",
    module="rle",
    source='''
    """Run-length encoding of short strings: 'aaab' <-> 'a3b1'."""


    def encode(text):
        out = []
        i = 0
        while i < len(text):
            j = i
            while j < len(text) and text[j] == text[i]:
                j += 1
            out.append(f"{text[i]}{j - i}")
            i = j
        return "".join(out)


    def decode(code):
        out = []
        i = 0
        while i < len(code):
            ch = code[i]
            j = i + 1
            while j < len(code) and code[j].isdigit():
                j += 1
            out.append(ch * int(code[i + 1 : j]))
            i = j
        return "".join(out)
    ''',
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: (
                "encode",
                ("".join(r.choice("aab") * r.randint(1, 4) for _ in range(r.randint(0, 4))),),
            ),
        ),
        *each(
            r,
            6,
            lambda: (
                "decode",
                ("".join(f"{r.choice('xyz')}{r.randint(1, 12)}" for _ in range(r.randint(1, 3))),),
            ),
        ),
    ],
)


TEMPLATES = (SLUG, SNAKE, WRAP, CAESAR, RLE)
