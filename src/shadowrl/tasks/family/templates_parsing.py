"""Templates of parsing: config lines, query strings, CSV, versions, sizes, expressions."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each


def pick(r: random.Random, *options: str) -> str:
    return r.choice(options)


KV = Template(
    id="config_lines",
    module="settings",
    source='''
    """Reading `key = value` settings files: comments, blank lines, typed values."""


    def parse_value(raw):
        raw = raw.strip()
        if raw.lower() in ("true", "yes", "on"):
            return True
        if raw.lower() in ("false", "no", "off"):
            return False
        if raw.lstrip("-").isdigit():
            return int(raw)
        return raw.strip('"')


    def parse(text):
        """A dict of settings; a later key wins; raises ValueError on a line without '='."""
        out = {}
        for number, line in enumerate(text.splitlines(), 1):
            line = line.split("$COMMENT", 1)[0].strip()
            if not line:
                continue
            if "=" not in line:
                raise ValueError(f"line {number}: expected key = value")
            key, value = line.split("=", 1)
            out[key.strip().lower()] = parse_value(value)
        return out
    ''',
    params={"COMMENT": ("#", ";")},
    cases=lambda r: [
        *each(
            r,
            5,
            lambda: (
                "parse_value",
                (pick(r, "yes", " Off", "42", "-7", '"quoted"', "text", "7x", "TRUE"),),
            ),
        ),
        *each(
            r,
            9,
            lambda: (
                "parse",
                (
                    "\n".join(
                        pick(
                            r,
                            "name = demo",
                            "Port=8080",
                            "debug = yes",
                            "",
                            "# a comment",
                            "; note",
                            "timeout = -1",
                            "mode = fast # inline",
                            "Name = other",
                            "broken line",
                            "path = /tmp/x",
                        )
                        for _ in range(r.randint(1, 5))
                    ),
                ),
            ),
        ),
    ],
)

QUERY = Template(
    id="query_string",
    module="querystring",
    source='''
    """Query strings by hand (the service has no urllib): 'a=1&b=x%20y&a=2'."""


    def unquote(text):
        out = []
        i = 0
        while i < len(text):
            if text[i] == "%" and i + 2 < len(text):
                out.append(chr(int(text[i + 1 : i + 3], 16)))
                i += 3
            else:
                out.append(" " if text[i] == "+" else text[i])
                i += 1
        return "".join(out)


    def parse_qs(query):
        """{key: [values]} in order; a key without '=' gets an empty value."""
        out = {}
        for pair in query.lstrip("?").split("&"):
            if not pair:
                continue
            key, _, value = pair.partition("=")
            out.setdefault(unquote(key), []).append(unquote(value))
        return out
    ''',
    cases=lambda r: [
        *each(
            r,
            5,
            lambda: ("unquote", (pick(r, "a%20b", "x+y", "100%25", "plain", "%41%42C", "end%2"),)),
        ),
        *each(
            r,
            9,
            lambda: (
                "parse_qs",
                (
                    pick(r, "?", "")
                    + "&".join(
                        pick(r, "a=1", "b=x%20y", "a=2", "flag", "q=c%2B%2B", "", "name=J+Doe")
                        for _ in range(r.randint(1, 4))
                    ),
                ),
            ),
        ),
    ],
)

CSV = Template(
    id="csv_line",
    module="csvline",
    source='''
    """Splitting one CSV line with quoted fields ('a,"b,c",d'), no csv module needed."""


    def split_line(line, sep="$SEP"):
        fields = []
        field = ""
        quoted = False
        i = 0
        while i < len(line):
            ch = line[i]
            if quoted:
                if ch == '"' and i + 1 < len(line) and line[i + 1] == '"':
                    field += '"'
                    i += 1
                elif ch == '"':
                    quoted = False
                else:
                    field += ch
            elif ch == '"':
                quoted = True
            elif ch == sep:
                fields.append(field)
                field = ""
            else:
                field += ch
            i += 1
        fields.append(field)
        return fields
    ''',
    params={"SEP": (",", ";")},
    cases=lambda r: each(
        r,
        14,
        lambda: (
            "split_line",
            (
                r.choice((",", ";")).join(
                    pick(r, "a", '"b,c"', '"x;y"', "", '"say ""hi"""', "42", " sp ")
                    for _ in range(r.randint(1, 5))
                ),
            ),
        ),
    ),
)

SEMVER = Template(
    id="semver",
    module="versions",
    source='''
    """Comparing release versions: '1.10.0' > '1.9.3', and '1.0.0-rc1' < '1.0.0'."""


    def parse(version):
        core, _, pre = version.partition("-")
        parts = [int(p) for p in core.split(".")]
        while len(parts) < 3:
            parts.append(0)
        return parts[0], parts[1], parts[2], pre


    def key(version):
        major, minor, patch, pre = parse(version)
        return (major, minor, patch, pre == "", pre)


    def compare(a, b):
        """-1, 0 or 1."""
        ka, kb = key(a), key(b)
        return (ka > kb) - (ka < kb)


    def latest(versions):
        return max(versions, key=key) if versions else None
    ''',
    cases=lambda r: [
        *each(r, 9, lambda: ("compare", (ver(r), ver(r)))),
        *each(r, 5, lambda: ("latest", ([ver(r) for _ in range(r.randint(0, 4))],))),
    ],
)


def ver(r: random.Random) -> str:
    core = ".".join(str(r.choice((0, 1, 2, 9, 10))) for _ in range(r.randint(1, 3)))
    return core + r.choice(("", "", "-rc1", "-alpha", "-rc2"))


SIZES = Template(
    id="byte_sizes",
    module="sizes",
    source='''
    """File sizes for humans: '1.5 KiB' and back."""

    UNITS = ["B", "KiB", "MiB", "GiB", "TiB"]


    def human(size, digits=$DIGITS):
        """The largest unit that keeps the number at least 1."""
        value = float(size)
        unit = 0
        while value >= 1024 and unit < len(UNITS) - 1:
            value /= 1024
            unit += 1
        if unit == 0:
            return f"{size} B"
        return f"{value:.{digits}f} {UNITS[unit]}"


    def parse_size(text):
        number, _, unit = text.strip().partition(" ")
        if unit not in UNITS:
            raise ValueError(f"unknown unit {unit!r}")
        return int(float(number) * 1024 ** UNITS.index(unit))
    ''',
    params={"DIGITS": ("1", "2")},
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: (
                "human",
                (r.choice((0, 1023, 1024, 1536, 10**6, 5 * 2**30, 2**50, r.randint(0, 10**10))),),
            ),
        ),
        *each(
            r,
            6,
            lambda: (
                "parse_size",
                (f"{r.choice((1, 1.5, 0.25, 12))} {r.choice(('B', 'KiB', 'MiB', 'GiB', 'KB'))}",),
            ),
        ),
    ],
)


TEMPLATES = (KV, QUERY, CSV, SEMVER, SIZES)
