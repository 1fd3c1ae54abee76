"""Templates of text handling: slugs, case conversion, wrapping, ciphers, compression (continued)."""

from __future__ import annotations

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each, words

TITLE = Template(
    id="title_case",
    module="titles",
    source='''
    """Headline capitalisation in the house style."""

    SMALL = {"a", "an", "and", "in", "of", "the", "$SMALL"}


    def title_case(text):
        """Capitalise every word except small ones, which stay lower unless first or last."""
        parts = text.lower().split()
        out = []
        for i, word in enumerate(parts):
            if word in SMALL and 0 < i < len(parts) - 1:
                out.append(word)
            else:
                out.append(word[:1].upper() + word[1:])
        return " ".join(out)
    ''',
    params={"SMALL": ("to", "for", "on")},
    cases=lambda r: each(r, 14, lambda: ("title_case", (words(r, 1, 6),))),
)

COMPRESS_SPACES = Template(
    id="normalize_whitespace",
    module="cleanup",
    source='''
    """Cleaning up user-entered text before it is stored."""


    def normalize(text, keep_newlines=$KEEP):
        """Collapse runs of spaces and tabs to one space; trim each line and the whole."""
        lines = text.split("\\n") if keep_newlines else [text.replace("\\n", " ")]
        cleaned = []
        for line in lines:
            words = line.replace("\\t", " ").split(" ")
            cleaned.append(" ".join(w for w in words if w))
        while cleaned and not cleaned[-1]:
            cleaned.pop()
        return "\\n".join(cleaned).strip()


    def count_words(text):
        return len(normalize(text).split())
    ''',
    params={"KEEP": ("True", "False")},
    cases=lambda r: [
        *each(
            r,
            10,
            lambda: (
                "normalize",
                (
                    "".join(
                        r.choice(("ab", " ", "  ", "\t", "\n", "cd ", "\n\n"))
                        for _ in range(r.randint(1, 8))
                    ),
                ),
            ),
        ),
        *each(
            r,
            4,
            lambda: ("count_words", (words(r, 0, 6).replace(" ", r.choice((" ", "  ", "\t"))),)),
        ),
    ],
)

MASK = Template(
    id="mask_card",
    module="masking",
    source='''
    """Masking card and account numbers in receipts and logs."""


    def mask(number, visible=$VISIBLE, fill="$FILL"):
        """Keep the last `visible` digits; every other digit becomes `fill`; spaces kept."""
        digits = sum(ch.isdigit() for ch in number)
        seen = 0
        out = []
        for ch in number:
            if ch.isdigit():
                seen += 1
                out.append(ch if seen > digits - visible else fill)
            else:
                out.append(ch)
        return "".join(out)


    def group(number, size=4):
        """Digits of `number` in groups of `size` separated by spaces."""
        digits = [ch for ch in number if ch.isdigit()]
        return " ".join("".join(digits[i : i + size]) for i in range(0, len(digits), size))
    ''',
    params={"VISIBLE": ("4", "3"), "FILL": ("*", "#", "x")},
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: ("mask", ("".join(r.choice("0123456789 ") for _ in range(r.randint(3, 19))),)),
        ),
        *each(
            r,
            6,
            lambda: (
                "group",
                (
                    "".join(r.choice("0123456789-") for _ in range(r.randint(1, 17))),
                    r.randint(2, 5),
                ),
            ),
        ),
    ],
)

PALINDROME = Template(
    id="palindromes",
    module="palindromes",
    source='''
    """Palindrome checks for the word-games page."""


    def is_palindrome(text):
        """True if the letters and digits of `text` read the same both ways, ignoring case."""
        chars = [ch.lower() for ch in text if ch.isalnum()]
        i, j = 0, len(chars) - 1
        while i < j:
            if chars[i] != chars[j]:
                return False
            i += 1
            j -= 1
        return True


    def longest_palindrome(text):
        """The longest palindromic substring (the first, if several tie)."""
        best = ""
        for i in range(len(text)):
            for j in range(i + len(best) + 1, len(text) + 1):
                piece = text[i:j]
                if piece == piece[::-1]:
                    best = piece
        return best
    ''',
    cases=lambda r: [
        *each(
            r,
            7,
            lambda: (
                "is_palindrome",
                (
                    r.choice(
                        (
                            "Abba",
                            "a man a plan",
                            "racecar",
                            "No on",
                            "xy",
                            "",
                            "Step on no pets",
                            "ab ba!",
                            "abca",
                        )
                    ),
                ),
            ),
        ),
        *each(
            r,
            7,
            lambda: (
                "longest_palindrome",
                ("".join(r.choice("abc") for _ in range(r.randint(1, 9))),),
            ),
        ),
    ],
)


TEMPLATES = (TITLE, COMPRESS_SPACES, MASK, PALINDROME)
