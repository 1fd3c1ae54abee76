"""How a state dict becomes weight-store shards: raw bytes, byte planes, pieces, owners, rows.

Pure functions over numpy byte arrays and the ranks' part manifests (`merge_parts`),
kept apart from the store (`weights.py`) that moves their output through a filesystem.
See that module for why deltas are XORs of byte planes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

Bytes = dict[str, np.ndarray]  # tensor name -> its raw little-endian bytes (uint8, 1-D)


class WeightStoreError(RuntimeError):
    """A version is missing, incomplete or corrupt."""


@dataclass(frozen=True)
class Layout:
    """dtype and shape of every tensor: what turns raw bytes back into a state dict."""

    tensors: dict[str, tuple[str, tuple[int, ...]]]

    @staticmethod
    def of(state: Mapping[str, Tensor]) -> Layout:
        return Layout(
            {k: (str(v.dtype).removeprefix("torch."), tuple(v.shape)) for k, v in state.items()}
        )


def to_bytes(state: Mapping[str, Tensor]) -> Bytes:
    """Own CPU copies of every tensor's bytes (the trainer keeps mutating its tensors)."""
    out = {}
    for name, t in state.items():
        flat = t.detach().to("cpu", copy=True).contiguous().reshape(-1)
        out[name] = flat.view(torch.uint8).numpy()
    return out


def to_state(raw: Bytes, layout: Layout) -> dict[str, Tensor]:
    """Raw bytes -> tensors (views of `raw`, no copy)."""
    out = {}
    for name, (dtype, shape) in layout.tensors.items():
        if raw[name].size == 0:  # a zero-size byte view has no stride to reinterpret
            out[name] = torch.empty(shape, dtype=getattr(torch, dtype))
        else:
            out[name] = torch.from_numpy(raw[name]).view(getattr(torch, dtype)).reshape(shape)
    return out


def shuffle(raw: np.ndarray, itemsize: int) -> np.ndarray:
    """Byte planes: [b0 b1 b0 b1 …] -> [b0 b0 … b1 b1 …]."""
    if itemsize == 1:
        return raw
    words, n = raw.reshape(-1, itemsize), raw.size // itemsize
    out = np.empty(raw.size, dtype=np.uint8)
    for j in range(itemsize):  # one strided plane at a time: ~5x faster than a transpose copy
        out[j * n : (j + 1) * n] = words[:, j]
    return out


def unshuffle(planes: np.ndarray, itemsize: int, out: np.ndarray | None = None) -> np.ndarray:
    """Inverse of `shuffle`, written into `out` (a 1-D uint8 array) when given."""
    out = np.empty(planes.size, dtype=np.uint8) if out is None else out
    if itemsize == 1:
        out[:] = planes
        return out
    n, words = planes.size // itemsize, out.reshape(-1, itemsize)
    for j in range(itemsize):
        words[:, j] = planes[j * n : (j + 1) * n]
    return out


def itemsize(dtype: str) -> int:
    return torch.empty((), dtype=getattr(torch, dtype)).element_size()


def nbytes(dtype: str, shape: list[int] | tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) * itemsize(dtype)


@dataclass(frozen=True)
class Piece:
    """A slice of one tensor's bytes stored contiguously inside one shard."""

    name: str
    start: int  # byte offset in the tensor
    nbytes: int
    shard: int
    offset: int  # byte offset in the shard's raw (decompressed) payload


def plan_pieces(sizes: Mapping[str, tuple[int, int]], shard_bytes: int) -> list[Piece]:
    """Cut tensors (name -> (nbytes, itemsize)) into element-aligned pieces packed into shards."""
    pieces: list[Piece] = []
    shard, fill = 0, 0
    for name, (size, item) in sizes.items():
        start = 0
        while start < size or (size == 0 and start == 0):
            room = max(shard_bytes - fill, item)
            take = min(size - start, room // item * item)
            pieces.append(Piece(name, start, take, shard, fill))
            start, fill = start + take, fill + take
            if fill >= shard_bytes:
                shard, fill = shard + 1, 0
            if size == 0:
                break
    return pieces


@dataclass(frozen=True)
class Rows:
    """Rows [start, stop) of dim 0 of a tensor of full shape `shape`: the slice one rank
    holds of an FSDP-sharded tensor, which that rank publishes alone."""

    start: int
    stop: int
    shape: tuple[int, ...]

    def byte_start(self, item: int) -> int:
        """Where the slice starts in the full tensor's raw bytes (rows are contiguous)."""
        return self.start * int(np.prod(self.shape[1:], dtype=np.int64)) * item

    def check(self, name: str, local: tuple[int, ...]) -> None:
        if local != (self.stop - self.start, *self.shape[1:]):
            raise ValueError(
                f"{name}: a {local} slice is not rows {self.start}:{self.stop} of {self.shape}"
            )


def untiled(spans: Iterable[tuple[int, int]], total: int) -> str | None:
    """None if the non-empty [start, stop) `spans` cover [0, total) once each; else where not."""
    at = 0
    for start, stop in sorted(s for s in spans if s[1] > s[0]):
        if start != at:
            return f"{'overlap' if start < at else 'nothing'} at {min(start, at)}"
        at = stop
    if at == total:
        return None
    return f"nothing at {at} of {total}" if at < total else f"an end at {at} past {total}"


def owners(sizes: Mapping[str, int], world_size: int) -> dict[str, int]:
    """Tensor name -> the rank that publishes it: contiguous runs of ~equal bytes.

    Every rank computes the same map from the same (ordered) state dict, so no
    coordination is needed to agree on who writes what.
    """
    total = max(sum(sizes.values()), 1)
    out, done = {}, 0
    for name, size in sizes.items():
        out[name] = min(done * world_size // total, world_size - 1)
        done += size
    return out


def merge_parts(
    version: int, parts: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], list[list[Any]], list[dict[str, Any]], dict[str, list[list[int]]]]:
    """The parts' tensors, pieces (shard indices made global), shards and slices; a
    tensor in two parts must be rows in each, and its parts' rows must tile it."""
    tensors: dict[str, Any] = {}
    pieces: list[list[Any]] = []
    shards: list[dict[str, Any]] = []
    slices: dict[str, list[list[int]]] = {}
    for i, p in enumerate(parts):
        rows = p.get("rows", {})
        for name, entry in p["tensors"].items():
            if name in tensors and not (name in rows and name in slices and tensors[name] == entry):
                raise WeightStoreError(f"v{version}: two parts publish the same tensor {name}")
            tensors[name] = entry
            if name in rows:
                slices.setdefault(name, []).append([p.get("part", i), *rows[name]])
        pieces += [[*pc[:3], pc[3] + len(shards), pc[4]] for pc in p["pieces"]]
        shards += p["shards"]
    for name, sl in slices.items():
        if bad := untiled([(a, b) for _, a, b in sl], tensors[name][1][0]):
            raise WeightStoreError(f"v{version}: the parts' rows of {name} leave {bad}")
    return tensors, pieces, shards, slices


CODECS = ("xor", "sub")
_INTS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def diff(new: np.ndarray, old: np.ndarray, item: int, codec: str) -> np.ndarray:
    """The delta new − old of two tensors' raw bytes, as raw bytes, exactly invertible.

    "xor": bitwise. "sub": the integer difference of the bit patterns (wrapping), zigzag-
    coded so small steps either way have zero high bytes. A float nudged by a few hundred
    ulps moves its bit pattern by that integer; its XOR also flips every bit a carry
    crosses, so "sub" leaves fewer non-zero bytes (7.6 % smaller on a real fp32 RL step).
    """
    if codec == "xor" or new.size == 0:
        return new ^ old
    t = _INTS[item]
    d = new.view(t) - old.view(t)
    return ((d << 1) ^ (d >> (8 * item - 1))).view(np.uint8)


def undiff(delta: np.ndarray, old: np.ndarray, item: int, codec: str) -> np.ndarray:
    """Inverse of `diff`: the new raw bytes from the delta and the old ones."""
    if codec == "xor" or delta.size == 0:
        return delta ^ old
    t, u = _INTS[item], np.dtype(f"u{item}")
    z = delta.view(u)
    d = (z >> 1).view(t) ^ -(z & 1).view(t)
    return (old.view(t) + d).view(np.uint8)
