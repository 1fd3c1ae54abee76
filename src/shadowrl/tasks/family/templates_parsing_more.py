"""Templates of parsing: config lines, query strings, CSV, versions, sizes, expressions (continued)."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_parsing import pick
from shadowrl.tasks.family.templates_text import each

RPN = Template(
    id="rpn_calculator",
    module="rpn",
    source='''
    """A reverse Polish calculator for the command line: '3 4 + 2 *' -> 14."""


    def evaluate(expression):
        stack = []
        for token in expression.split():
            if token in ("+", "-", "*", "/"):
                if len(stack) < 2:
                    raise ValueError("not enough operands")
                b = stack.pop()
                a = stack.pop()
                if token == "+":
                    stack.append(a + b)
                elif token == "-":
                    stack.append(a - b)
                elif token == "*":
                    stack.append(a * b)
                else:
                    stack.append(a // b)
            else:
                stack.append(int(token))
        if len(stack) != 1:
            raise ValueError("leftover operands")
        return stack[0]
    ''',
    cases=lambda r: each(
        r,
        14,
        lambda: (
            "evaluate",
            (
                pick(
                    r,
                    "3 4 +",
                    "10 3 -",
                    "2 3 4 * +",
                    "20 6 /",
                    "5 1 2 + 4 * + 3 -",
                    "1 +",
                    "1 2",
                    "7 2 - 3 *",
                    "9 4 /",
                    "8 2 3 - *",
                    "4 2 5 * + 1 3 2 * + /",
                ),
            ),
        ),
    ),
)

IPV4 = Template(
    id="ipv4",
    module="ipv4",
    source='''
    """IPv4 addresses as strings and integers, and whether one is in a network."""


    def to_int(address):
        parts = address.split(".")
        if len(parts) != 4:
            raise ValueError(f"not an IPv4 address: {address}")
        value = 0
        for part in parts:
            if not part.isdigit() or int(part) > 255:
                raise ValueError(f"bad octet {part!r}")
            value = value * 256 + int(part)
        return value


    def to_str(value):
        return ".".join(str(value >> shift & 255) for shift in (24, 16, 8, 0))


    def in_network(address, network):
        """'10.1.2.3' in '10.1.0.0/16'."""
        base, _, bits = network.partition("/")
        mask = (0xFFFFFFFF << (32 - int(bits))) & 0xFFFFFFFF
        return to_int(address) & mask == to_int(base) & mask
    ''',
    cases=lambda r: [
        *each(r, 5, lambda: ("to_int", (ip(r),))),
        *each(r, 4, lambda: ("to_str", (r.randint(0, 2**32 - 1),))),
        *each(
            r,
            5,
            lambda: (
                "in_network",
                (ip(r, ok=True), f"{ip(r, ok=True)}/{r.choice((8, 16, 24, 32, 0))}"),
            ),
        ),
    ],
)


def ip(r: random.Random, ok: bool = False) -> str:
    parts = [str(r.choice((0, 1, 10, 127, 192, 255, r.randint(0, 255)))) for _ in range(4)]
    if not ok and r.random() < 0.2:
        parts[r.randrange(4)] = r.choice(("256", "x", ""))
    return ".".join(parts)


HEX_COLOR = Template(
    id="hex_colors",
    module="colors",
    source='''
    """Colours for the theme editor: '#1a2b3c' <-> (26, 43, 60), and mixing."""


    def to_rgb(code):
        code = code.lstrip("#")
        if len(code) == 3:
            code = "".join(ch * 2 for ch in code)
        if len(code) != 6:
            raise ValueError(f"bad colour {code!r}")
        return tuple(int(code[i : i + 2], 16) for i in range(0, 6, 2))


    def to_hex(rgb):
        return "#" + "".join(f"{max(0, min(255, c)):02x}" for c in rgb)


    def mix(a, b, percent=$PCT):
        """`percent` of colour `b` over colour `a`."""
        ra, rb = to_rgb(a), to_rgb(b)
        return to_hex(tuple(x + (y - x) * percent // 100 for x, y in zip(ra, rb)))
    ''',
    params={"PCT": ("50", "25")},
    cases=lambda r: [
        *each(
            r,
            5,
            lambda: ("to_rgb", (pick(r, "#fff", "#1a2b3c", "000000", "#abcd", "#FF8800", "#0f0"),)),
        ),
        *each(
            r,
            4,
            lambda: (
                "to_hex",
                (tuple(r.choice((0, 15, 16, 255, 300, -4, r.randint(0, 255))) for _ in range(3)),),
            ),
        ),
        *each(
            r,
            5,
            lambda: (
                "mix",
                (pick(r, "#000", "#ffffff", "#123456"), pick(r, "#fff", "#808080", "#ff0000")),
            ),
        ),
    ],
)

PHONE = Template(
    id="phone_numbers",
    module="phones",
    source='''
    """Normalising phone numbers typed into forms to one display format."""


    def digits(text):
        return "".join(ch for ch in text if ch.isdigit())


    def normalize(text, country="$CC"):
        """'+44 20 7946 0018', '(020) 7946-0018' -> '+44 2079460018'; ValueError if too short."""
        number = digits(text)
        if text.strip().startswith("+"):
            cc_len = len(country)
            country, number = number[:cc_len], number[cc_len:]
        elif number.startswith("0"):
            number = number[1:]
        if len(number) < $MIN:
            raise ValueError(f"too short: {text!r}")
        return f"+{country} {number}"
    ''',
    params={"CC": ("44", "33", "49"), "MIN": ("9", "8")},
    cases=lambda r: each(
        r,
        14,
        lambda: (
            "normalize",
            (
                pick(r, "+", "", "", "0")
                + " ".join(str(r.randint(10, 9999)) for _ in range(r.randint(1, 4))),
            ),
        ),
    ),
)


TEMPLATES = (RPN, IPV4, HEX_COLOR, PHONE)
