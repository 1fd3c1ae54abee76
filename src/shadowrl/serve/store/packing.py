"""Token arrays as compact blobs: one column value per array, never a row per token.

A request's prompt ids, generated ids, logprobs and policy versions are stored as
little-endian int32 / float32 bytes in one binary column each, with the array length
in an integer column next to it, so a reader can check that a row is whole
(`len(blob) == 4 * count`). Explicit little-endian keeps a database file readable on
any machine. float32 is what the engine computes logprobs in, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

INT32 = np.dtype("<i4")
FLOAT32 = np.dtype("<f4")
WIDTH = 4  # bytes per element of both kinds


class PackingError(ValueError):
    """A blob whose length is not a whole number of elements, or a value out of range."""


def pack_ints(values: Sequence[int]) -> bytes:
    """int32 little-endian bytes; raises `PackingError` for values outside int32."""
    arr = np.asarray(values, dtype=np.int64)
    if arr.size and (arr.min() < np.iinfo(INT32).min or arr.max() > np.iinfo(INT32).max):
        raise PackingError("value outside int32")
    return arr.astype(INT32).tobytes()


def unpack_ints(blob: bytes) -> tuple[int, ...]:
    return tuple(int(x) for x in np.frombuffer(_whole(blob), dtype=INT32))


def pack_floats(values: Sequence[float]) -> bytes:
    """float32 little-endian bytes (values are rounded to float32)."""
    return np.asarray(values, dtype=np.float64).astype(FLOAT32).tobytes()


def unpack_floats(blob: bytes) -> tuple[float, ...]:
    return tuple(float(x) for x in np.frombuffer(_whole(blob), dtype=FLOAT32))


def count(blob: bytes) -> int:
    """How many elements a blob holds (raises `PackingError` for a torn blob)."""
    return len(_whole(blob)) // WIDTH


def _whole(blob: bytes) -> bytes:
    if len(blob) % WIDTH:
        raise PackingError(f"blob of {len(blob)} bytes is not a whole number of 4-byte values")
    return blob
