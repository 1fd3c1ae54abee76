"""The reports' one markdown table writer."""

from __future__ import annotations

import pytest

from shadowrl.markdown import table


def test_table_lines_and_escaped_pipes() -> None:
    assert table(("a", "b"), [(1, "x|y"), ("", 2.5)]) == [
        "| a | b |",
        "|---|---|",
        "| 1 | x\\|y |",
        "|  | 2.5 |",
    ]


def test_a_row_of_the_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError, match="2 cells under 3 columns"):
        table(("a", "b", "c"), [(1, 2)])
