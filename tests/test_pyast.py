"""Concurrent parsing is serialised and gives the same trees as parsing one at a time.

The race is real on CPython 3.11: with `ast.parse` in place of `pyast.parse`, the first
test fails with `SystemError: AST constructor recursion depth mismatch`. It needs a
thread switch in the middle of building the tree, which Python code run by the garbage
collector (a finalizer) provides; the test makes such garbage on purpose.
"""

from __future__ import annotations

import ast
import gc
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from shadowrl import pyast

SOURCE = "\n".join(
    f"def f{i}(x):\n    return {'(' * 40}x + {i}{')' * 40}\n\nclass C{i}:\n    y = [{i}, {{'k': {i}}}]\n"
    for i in range(200)
)


class _Garbage:
    """A cycle with a finalizer: collecting it runs Python code, a chance to switch threads."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))


@pytest.fixture
def frequent_gc() -> Iterator[None]:
    old = gc.get_threshold()
    gc.set_threshold(50, 5, 5)
    yield
    gc.set_threshold(*old)


def test_parses_in_many_threads_at_once_agree_with_a_serial_parse(frequent_gc: None) -> None:
    want = ast.dump(ast.parse(SOURCE))
    start = threading.Barrier(8)  # every thread starts parsing at the same moment

    def parse_many(_: int) -> set[str]:
        start.wait()
        dumps = set()
        for _ in range(10):
            garbage = [_Garbage() for _ in range(200)]
            del garbage
            dumps.add(ast.dump(pyast.parse(SOURCE, "many.py")))
        return dumps

    with ThreadPoolExecutor(8) as pool:
        dumps = set().union(*pool.map(parse_many, range(8)))
    assert dumps == {want}


def test_parse_keeps_the_filename_in_syntax_errors() -> None:
    with pytest.raises(SyntaxError) as err:
        pyast.parse("def (:\n", "broken.py")
    assert err.value.filename == "broken.py"
