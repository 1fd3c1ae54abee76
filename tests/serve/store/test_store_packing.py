"""Packed token arrays: exact round trips, a fixed byte layout, torn blobs refused."""

from __future__ import annotations

import numpy as np
import pytest

from shadowrl.serve.store.packing import (
    PackingError,
    count,
    pack_floats,
    pack_ints,
    unpack_floats,
    unpack_ints,
)


@pytest.mark.parametrize("ids", [(), (0,), (1, 2, 3), (49151, 0, 7), (-1, -(2**31), 2**31 - 1)])
def test_ints_round_trip(ids: tuple[int, ...]) -> None:
    blob = pack_ints(ids)
    assert unpack_ints(blob) == ids
    assert count(blob) == len(ids) and len(blob) == 4 * len(ids)


def test_layout_is_little_endian_int32_and_float32() -> None:
    assert pack_ints([1, 256]) == b"\x01\x00\x00\x00\x00\x01\x00\x00"
    assert pack_floats([1.0]) == np.float32(1.0).tobytes() == b"\x00\x00\x80\x3f"


def test_floats_round_trip_at_float32_precision() -> None:
    rng = np.random.default_rng(0)
    values = tuple(float(x) for x in rng.normal(-2.0, 1.0, 300).astype(np.float32))
    assert unpack_floats(pack_floats(values)) == values  # float32 values come back exactly
    assert unpack_floats(pack_floats([0.1]))[0] == pytest.approx(0.1, rel=1e-7)
    assert unpack_floats(pack_floats([0.1]))[0] != 0.1  # rounded to float32, as documented


def test_torn_blob_and_out_of_range_are_refused() -> None:
    with pytest.raises(PackingError):
        unpack_ints(pack_ints([1, 2])[:-1])
    with pytest.raises(PackingError):
        count(b"\x00" * 6)
    with pytest.raises(PackingError):
        pack_ints([2**31])
