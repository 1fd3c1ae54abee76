"""The one rule for a test whose real component is missing on this machine.

Where PostgreSQL, Chromium or the overlay sandbox is unavailable a test skips, so
`make test` still runs on a bare box; under CI (`CI=true` or `CI=1`) it fails instead,
so a green CI run has really exercised the trace store, the review page and the
sandbox's isolation.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true")


def unavailable(reason: str) -> NoReturn:
    """Skip the calling test (or fixture) for `reason`; fail it under CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing component is a failure, not a skip)")
    pytest.skip(reason)


def require(reason: str | None, what: str) -> None:
    """`unavailable(what: reason)` unless `reason` is None (the component is there)."""
    if reason is not None:
        unavailable(f"{what}: {reason}")
