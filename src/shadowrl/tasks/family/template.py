"""A template: one kind of ordinary module (parsing, dates, money, ...) the family breaks.

A template is data: the module's source with `$name` placeholders (constants, names,
strings: never anything that changes the code's shape, so a mutation site is the same
node in every rendering), the choices for each placeholder, and a function that draws
the calls the tests make. The expected value of every call is what the correct
(rendered) module returns, computed by running it: the tests are the code's own
behaviour, never hand-written answers.
"""

from __future__ import annotations

import builtins
import datetime
import decimal
import random
import string
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Call = tuple[str, tuple[Any, ...]]  # (function name, positional arguments)
# Names a test's literals may use: `repr` of a date or a Decimal names these.
LITERAL_NAMES: dict[str, Any] = {"datetime": datetime, "Decimal": decimal.Decimal}


@dataclass(frozen=True)
class Template:
    """One module of ordinary code, parameterised, with a sampler of test inputs."""

    id: str  # stable: the split hash, `Task.repo` and the near-duplicate key use it
    module: str  # the file's stem in the workspace (`<module>.py`)
    source: str  # the module; `$name` placeholders are filled from `params`
    cases: Callable[[random.Random], Sequence[Call]]  # the calls the tests make
    params: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def render(self, rng: random.Random) -> Rendering:
        """The module with each placeholder drawn from its choices (sorted: seed-stable)."""
        chosen = {name: rng.choice(list(self.params[name])) for name in sorted(self.params)}
        return Rendering(self, self.filled(chosen), tuple(sorted(chosen.items())))

    def filled(self, chosen: Mapping[str, str]) -> str:
        """The module with each placeholder replaced by its value in `chosen`."""
        return string.Template(textwrap.dedent(self.source).lstrip("\n")).substitute(chosen)


@dataclass(frozen=True)
class Rendering:
    """A template's module with its placeholders filled: the correct code of one instance."""

    template: Template
    source: str
    params: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Outcome:
    """What one call returned, as a literal (`repr`), or the exception type it raised."""

    value: str = ""
    raises: str = ""


def literal(value: Any) -> str | None:
    """`repr(value)` when it reads back as an equal value, else None (not testable as ==)."""
    text = repr(value)
    try:
        back = eval(text, dict(LITERAL_NAMES))
    except Exception:
        return None
    return text if back == value and type(back) is type(value) else None


def run_calls(source: str, calls: Sequence[Call]) -> list[Outcome | None]:
    """Each call's outcome on `source` (trusted: only ever the correct module), None for a
    call whose result is no literal (it cannot be a test)."""
    namespace: dict[str, Any] = {"__name__": "family_module"}
    exec(compile(source, "<family>", "exec"), namespace)  # our own template, never a mutant
    out: list[Outcome | None] = []
    for name, args in calls:
        try:
            value = namespace[name](*args)
        except Exception as e:  # the correct code raising is a behaviour tests pin
            builtin = getattr(builtins, type(e).__name__, None) is type(e)
            out.append(Outcome(raises=type(e).__name__) if builtin else None)
            continue
        text = literal(value)
        out.append(None if text is None else Outcome(value=text))
    return out


@dataclass(frozen=True)
class Case:
    """One call of a test and what the correct module does with it."""

    call: Call
    args: str  # the arguments as a literal tuple
    expected: Outcome

    def __hash__(self) -> int:  # the call's arguments may hold lists: hash their literal
        return hash((self.call[0], self.args))

    @property
    def text(self) -> str:
        return f"{self.call[0]}({self.args[1:-2] if self.args.endswith(',)') else self.args[1:-1]})"
