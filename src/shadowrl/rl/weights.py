"""Weight store: the trainer publishes each new version, engines fetch it, bit-exactly.

After one small optimizer step most weights keep their sign, exponent and high
mantissa bits, so the bitwise XOR of the new and the previous tensor is mostly zero
bytes. Splitting the XOR into byte planes (all first bytes, then all second bytes,
… the "shuffle" filter of Blosc/HDF5) puts those zeros next to each other and zstd
squeezes them to almost nothing. (The default codec takes the integer difference of
the bit patterns instead of the XOR: the same idea, fewer non-zero bytes, see
`weight_codec.diff`.) A full snapshot is written every `full_every`
versions so a new engine never replays a long chain.

Layout under the store URL (any fsspec filesystem: `file://` or a local dir,
`memory://`, `s3://…` through s3fs):

    v00000012/p000-s00000-<sha>.zst …  zstd of shuffled bytes, ~shard_bytes raw each;
                                      p = the writing rank's part, s = its shard
    v00000012/manifest.json           tensors, pieces, each shard's part and sha256; written
                                      LAST, so a version exists iff its manifest does

Data-parallel ranks each write the part they own (`write_part`, in parallel, with
no coordination) and one of them `commit`s the parts' manifests. Replicas
(`train.parallel: replicate`) hold every tensor whole, so each tensor goes whole to
one rank (`weight_codec.owners`: ~equal bytes each, one part per tensor, no row
bookkeeping). FSDP ranks hold rows of dim 0 of every tensor, and handing a tensor to
one owner would take a gather of the others' rows, so each rank writes the rows it
holds (`Rows`): a piece's byte start is its place in the full tensor, the manifest's
`slices` lists each sliced tensor's [part, first row, end row], `commit` refuses parts
whose rows do not tile a tensor, and readers assemble full tensors, refusing a
version whose pieces leave a byte of a tensor uncovered. A writer killed
mid-publish leaves shards no manifest names: readers never see them. Shard names
carry their content hash, so a republished version never overwrites a file a
reader of the old manifest is reading. A shard that is all zero bytes (an
unchanged stretch of a delta) is not written at all, and readers skip it.

`fetch` verifies every shard's sha256 and refuses missing or corrupt data rather
than handing an engine silently wrong weights.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch
import zstandard
from torch import Tensor

from shadowrl.atomic import write_via
from shadowrl.rl.weight_codec import (
    CODECS,
    Bytes,
    Layout,
    Piece,
    Rows,
    WeightStoreError,
    diff,
    itemsize,
    merge_parts,
    nbytes,
    owners,
    plan_pieces,
    shuffle,
    to_bytes,
    to_state,
    undiff,
    unshuffle,
    untiled,
)

__all__ = [
    "Rows", "WeightStore", "WeightStoreError", "owners", "plan_pieces", "shuffle", "unshuffle"
]  # fmt: skip
log = logging.getLogger(__name__)
FORMAT = 2
READABLE = (1, 2)  # format 1: the same manifest, shards always stored, named shard-N.zst


class WeightStore:
    """Publish (trainer side) and fetch (engine side) versions of a model's weights."""

    def __init__(
        self,
        url: str,
        *,
        full_every: int = 10,
        shard_bytes: int = 64 << 20,
        zstd_level: int = 3,
        threads: int = 4,
        dtype: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        codec: str = "sub",
    ) -> None:
        """`dtype` (e.g. "bfloat16"): publish floating tensors cast to the engine's serving
        precision, so fewer bytes travel and deltas are XORs of what the engine holds.
        `storage_options` go to fsspec (for s3: `endpoint_url`, `key`, `secret`, ...).
        `codec`: how a delta is taken ("sub" or "xor", see `weight_codec.diff`)."""
        import fsspec

        if codec not in CODECS:
            raise ValueError(f"codec {codec!r} is not one of {CODECS}")
        options = dict(storage_options or {})
        self.spec: dict[str, Any] = {
            "url": url,
            "full_every": full_every,
            "shard_bytes": shard_bytes,
            "zstd_level": zstd_level,
            "threads": threads,
            "dtype": dtype,
            "storage_options": options,
            "codec": codec,
        }  # what another process (a data-parallel rank) needs to open the same store
        self.fs, self.root = fsspec.core.url_to_fs(url, **options)
        self.fs.makedirs(self.root, exist_ok=True)
        self.full_every, self.shard_bytes, self.level = full_every, shard_bytes, zstd_level
        self.pool = ThreadPoolExecutor(max(threads, 1))  # zstd, numpy and s3 release the GIL
        self.dtype = getattr(torch, dtype) if dtype else None
        self.codec = codec
        # version, last full, (layout, rows) and raw bytes of the last part written here
        self._sent: tuple[int, int, tuple[Layout, dict[str, Rows]], Bytes] | None = None
        # reader cache: the last fetched version, its bytes and its shards' hashes (a version
        # republished with other content, as after a resume, is not taken from the cache)
        self._got: tuple[int, Bytes, list[Any]] | None = None
        self.fetched = {"shards": 0, "bytes": 0}  # what fetches downloaded, for tests/benchmarks

    # -- trainer side --------------------------------------------------------------
    def publish(
        self, state: Mapping[str, Tensor], version: int, meta: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Write `version` as a delta against the last published one (or as a full snapshot);
        `meta` (JSON) is kept in its manifest for readers (`meta(version)`)."""
        return self.commit(version, [self.write_part(state, version)], meta)

    def write_part(
        self,
        state: Mapping[str, Tensor],
        version: int,
        part: int = 0,
        rows: Mapping[str, Rows] | None = None,
    ) -> dict[str, Any]:
        """Write the shards of `state` (one rank's tensors) for `version`; invisible until
        `commit` gets the returned part manifest. `rows`: the tensors of `state` that are
        slices of larger ones (an FSDP rank's shards), each one's rows and full shape."""
        t0 = time.perf_counter()
        rows = dict(rows or {})
        for k, r in rows.items():
            r.check(k, tuple(state[k].shape))
        if self.dtype is not None:
            state = {k: v.to(self.dtype) if v.is_floating_point() else v for k, v in state.items()}
        layout, raw = Layout.of(state), to_bytes(state)
        prev = self._sent
        full = (
            prev is None
            or prev[2] != (layout, rows)
            or version <= prev[0]
            or version - prev[1] >= self.full_every
        )
        base = None if full or prev is None else prev[0]
        if base is None or prev is None:
            payload = raw
        else:
            items = {k: itemsize(dt) for k, (dt, _) in layout.tensors.items()}
            payload = {k: diff(raw[k], prev[3][k], items[k], self.codec) for k in raw}
        pieces, shards = self._write_shards(version, part, layout, payload, rows)
        last_full = version if base is None or prev is None else prev[1]
        self._sent = (version, last_full, (layout, rows), raw)
        return {
            "kind": "full" if base is None else "delta",
            "base_version": base,
            "codec": self.codec,
            "part": part,
            "tensors": {
                k: [dt, list(rows[k].shape if k in rows else shape)]
                for k, (dt, shape) in layout.tensors.items()
            },
            "rows": {k: [r.start, r.stop] for k, r in rows.items()},
            "pieces": pieces,
            "shards": shards,
            "write_ms": (time.perf_counter() - t0) * 1e3,
        }

    def commit(
        self,
        version: int,
        parts: Sequence[Mapping[str, Any]],
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Make `version` visible: one manifest naming every part's shards, written last."""
        t0 = time.perf_counter()
        kinds = {(p["kind"], p["base_version"], p["codec"]) for p in parts}
        if len(kinds) != 1:
            raise WeightStoreError(f"v{version}: parts disagree on full/delta and base: {kinds}")
        kind, base, codec = kinds.pop()
        tensors, pieces, shards, slices = merge_parts(version, parts)
        manifest = {
            "format": FORMAT,
            "version": version,
            "kind": kind,
            "base_version": base,
            "codec": codec,
            "tensors": tensors,
            "pieces": pieces,
            "shards": shards,
            "slices": slices,
            "raw_bytes": sum(s["raw_bytes"] for s in shards),
            "stored_bytes": sum(s["bytes"] for s in shards),
            "meta": dict(meta or {}),
        }
        vdir = self._vdir(version)
        write_via(self.fs, f"{vdir}/manifest.json", json.dumps(manifest))  # the commit point
        info = {
            "version": version,
            "kind": kind,
            "full_bytes": manifest["raw_bytes"],
            "stored_bytes": manifest["stored_bytes"],
            "ratio": manifest["stored_bytes"] / max(manifest["raw_bytes"], 1),
            "shards": sum(s["file"] is not None for s in shards),
            "parts": len(parts),
            "publish_ms": max(p["write_ms"] for p in parts) + (time.perf_counter() - t0) * 1e3,
        }
        log.info("published v%d (%s): %.1f MB of %.1f MB", version, kind,
                 info["stored_bytes"] / 1e6, info["full_bytes"] / 1e6)  # fmt: skip
        return info

    def _write_shards(
        self, version: int, part: int, layout: Layout, payload: Bytes, rows: dict[str, Rows]
    ) -> tuple[list[list[Any]], list[dict[str, Any]]]:
        vdir = self._vdir(version)
        self.fs.makedirs(vdir, exist_ok=True)
        sizes = {k: itemsize(dt) for k, (dt, _) in layout.tensors.items()}
        pieces = plan_pieces({k: (payload[k].nbytes, sizes[k]) for k in payload}, self.shard_bytes)
        by_shard: dict[int, list[Piece]] = {}
        for p in pieces:
            by_shard.setdefault(p.shard, []).append(p)

        def write_shard(i: int) -> dict[str, Any]:
            raw = np.concatenate(
                [
                    shuffle(payload[p.name][p.start : p.start + p.nbytes], sizes[p.name])
                    for p in by_shard[i]
                ]
            )
            entry: dict[str, Any] = {
                "part": part,
                "file": None,
                "sha256": None,
                "raw_bytes": raw.size,
                "bytes": 0,
            }
            if not raw.any():  # nothing changed here (or all zeros): nothing to send
                return entry
            blob = zstandard.ZstdCompressor(level=self.level).compress(raw.data)
            sha = hashlib.sha256(blob).hexdigest()
            name = f"p{part:03d}-s{i:05d}-{sha[:16]}.zst"
            with self.fs.open(f"{vdir}/{name}", "wb") as f:
                f.write(blob)
            return {**entry, "file": name, "sha256": sha, "bytes": len(blob)}

        shards = list(self.pool.map(write_shard, sorted(by_shard)))
        at = {k: r.byte_start(sizes[k]) for k, r in rows.items()}  # a slice's place in its tensor
        return [
            [p.name, at.get(p.name, 0) + p.start, p.nbytes, p.shard, p.offset] for p in pieces
        ], shards

    # -- engine side ---------------------------------------------------------------
    def versions(self) -> list[int]:
        """Committed versions (those whose manifest exists), oldest first."""
        self.fs.invalidate_cache()  # s3fs caches listings: a poller must see new versions
        found = self.fs.glob(f"{self.root}/v*/manifest.json")
        return sorted(int(p.rstrip("/").split("/")[-2][1:]) for p in found)

    def latest_version(self) -> int | None:
        vs = self.versions()
        return vs[-1] if vs else None

    def fetch(
        self,
        version: int,
        base: Mapping[str, Tensor] | None = None,
        *,
        base_version: int | None = None,
    ) -> dict[str, Tensor]:
        """Rebuild `version` bit-exactly; apply only the deltas after `base`/the last fetch.

        `base` (with its `base_version`) is what the caller already holds; without it the
        chain is replayed from the nearest full snapshot or the last version fetched here.
        The returned tensors share memory with the store's cache: copy before mutating.
        """
        if base is not None and base_version is None:
            raise ValueError("base needs its base_version")
        target = self._manifest(version)
        have = (base_version, to_bytes(base), None) if base is not None else self._got
        if have is not None and have[0] == version and have[2] not in (None, _hashes(target)):
            have = None
        chain = [target]
        while chain[-1]["kind"] == "delta" and (
            have is None or chain[-1]["base_version"] != have[0]
        ):
            chain.append(self._manifest(chain[-1]["base_version"]))
        if have is not None and have[0] == version:
            raw, chain = have[1], []
        elif chain[-1]["kind"] == "full":
            raw = self._decode(chain.pop())
        else:  # the chain reached the version the caller (or our cache) already holds
            raw = have[1] if have is not None else {}
        for m in reversed(chain):
            delta, codec = self._decode(m), m.get("codec", "xor")  # format 1: xor
            items = {k: itemsize(dt) for k, (dt, _) in m["tensors"].items()}
            raw = {k: undiff(delta[k], raw[k], items[k], codec) for k in delta}
        self._got = (version, raw, _hashes(target))
        layout = Layout({k: (dt, tuple(shape)) for k, (dt, shape) in target["tensors"].items()})
        return to_state(raw, layout)

    def meta(self, version: int) -> dict[str, Any]:
        """What the publisher of `version` kept with it (`publish(meta=...)`; {} if nothing)."""
        return dict(self._manifest(version).get("meta", {}))

    def _manifest(self, version: int) -> dict[str, Any]:
        path = f"{self._vdir(version)}/manifest.json"
        self.fs.invalidate_cache(self._vdir(version))
        try:
            with self.fs.open(path, "r") as f:
                m: dict[str, Any] = json.load(f)
        except FileNotFoundError as e:
            raise WeightStoreError(f"version {version} is not committed ({path} missing)") from e
        if m.get("format") not in READABLE:
            raise WeightStoreError(f"{path}: unknown format {m.get('format')}")
        return m

    def _decode(self, m: dict[str, Any]) -> Bytes:
        vdir = self._vdir(m["version"])

        def read_shard(s: dict[str, Any]) -> np.ndarray:
            if s["file"] is None:  # an all-zero shard: nothing was stored, nothing to fetch
                return np.zeros(s["raw_bytes"], dtype=np.uint8)
            try:
                with self.fs.open(f"{vdir}/{s['file']}", "rb") as f:
                    blob = f.read()
            except FileNotFoundError as e:
                raise WeightStoreError(f"v{m['version']}: shard {s['file']} is missing") from e
            if hashlib.sha256(blob).hexdigest() != s["sha256"]:
                raise WeightStoreError(f"v{m['version']}: shard {s['file']} fails its sha256")
            return np.frombuffer(zstandard.ZstdDecompressor().decompress(blob), dtype=np.uint8)

        spans: dict[str, list[tuple[int, int]]] = {}
        for pc in m["pieces"]:
            spans.setdefault(pc[0], []).append((pc[1], pc[1] + pc[2]))
        for name, (dt, shape) in m["tensors"].items():  # a piece lost from the manifest
            if bad := untiled(spans.get(name, []), nbytes(dt, shape)):
                raise WeightStoreError(f"v{m['version']}: the pieces of {name} leave {bad}")
        shards = list(self.pool.map(read_shard, m["shards"]))
        stored = [s for s in m["shards"] if s["file"] is not None]
        self.fetched["shards"] += len(stored)
        self.fetched["bytes"] += sum(s["bytes"] for s in stored)
        out = {
            k: np.empty(nbytes(dt, shape), dtype=np.uint8)
            for k, (dt, shape) in m["tensors"].items()
        }
        for name, start, size, shard, offset in m["pieces"]:
            planes = shards[shard][offset : offset + size]
            unshuffle(planes, itemsize(m["tensors"][name][0]), out[name][start : start + size])
        return out

    def _vdir(self, version: int) -> str:
        return f"{self.root}/v{version:08d}"


def _hashes(manifest: Mapping[str, Any]) -> list[Any]:
    return [s["sha256"] for s in manifest["shards"]]
