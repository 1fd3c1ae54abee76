"""Weight store: bit-exact delta round trips, corruption, atomicity and rank-sharded
publishing, each on a local dir, fsspec's memory:// and a real S3 API (moto's server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from shadowrl.rl.weight_codec import diff, undiff
from shadowrl.rl.weights import (
    WeightStore,
    WeightStoreError,
    owners,
    plan_pieces,
    shuffle,
    unshuffle,
)

from .conftest import StoreUrl


def states(dtype: torch.dtype, n: int = 5, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    """A random state and n−1 small AdamW-like perturbations of it."""
    g = torch.Generator().manual_seed(seed)
    s = {
        "w": torch.randn(64, 33, generator=g).to(dtype),
        "b": torch.randn(7, generator=g).to(dtype),
        "scalar": torch.tensor(3.0).to(dtype),
        "empty": torch.zeros(0, 4).to(dtype),
    }
    out = [s]
    for _ in range(n - 1):
        s = {
            k: (v.float() + 1e-3 * torch.randn(v.shape, generator=g)).to(dtype)
            for k, v in s.items()
        }
        out.append(s)
    return out


def assert_bit_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        assert torch.equal(a[k].view(-1).view(torch.uint8), b[k].view(-1).view(torch.uint8)), k


def open_store(where: StoreUrl, **kw) -> WeightStore:
    return WeightStore(where.url, storage_options=where.options, **kw)


def shard_paths(store: WeightStore, version: int) -> list[str]:
    return sorted(store.fs.glob(f"{store.root}/v{version:08d}/p*.zst"))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_delta_round_trip_is_bit_exact(store_url: StoreUrl, dtype: torch.dtype):
    seq = states(dtype)
    store = open_store(store_url, full_every=3, shard_bytes=1000)
    kinds = [store.publish(s, v)["kind"] for v, s in enumerate(seq, start=1)]
    assert kinds == ["full", "delta", "delta", "full", "delta"]
    assert store.latest_version() == len(seq)
    # A fresh reader replays from the nearest full snapshot.
    for v, s in enumerate(seq, start=1):
        assert_bit_equal(open_store(store_url).fetch(v), s)
    # An engine holding v2 applies only the deltas after it.
    reader = open_store(store_url)
    assert_bit_equal(reader.fetch(3, seq[1], base_version=2), seq[2])
    # A reader that follows along reuses its last fetch as the base.
    follower = open_store(store_url)
    for v, s in enumerate(seq, start=1):
        assert_bit_equal(follower.fetch(v), s)


@pytest.mark.parametrize("codec", ["xor", "sub"])
def test_both_codecs_round_trip_every_dtype_bit_exactly(tmp_path: Path, codec: str):
    seq = [
        {k: t for k, t in s.items()} | {"i": torch.arange(-3, 4, dtype=torch.int64) * (v + 1)}
        for v, s in enumerate(states(torch.float32, n=3) + states(torch.float16, n=1))
    ]  # the float16 state changes the layout: a full snapshot, then deltas again
    seq.append({k: t.clone() for k, t in seq[-1].items()} | {"i": seq[-1]["i"].flip(0)})
    store = WeightStore(str(tmp_path), codec=codec)
    for v, s in enumerate(seq, start=1):
        store.publish(s, v)
        assert_bit_equal(WeightStore(str(tmp_path)).fetch(v), s)


def test_diff_inverts_on_extreme_bit_patterns():
    g = np.random.default_rng(0)
    for item in (1, 2, 4, 8):
        a = g.integers(0, 256, size=64 * item, dtype=np.uint8)
        b = g.integers(0, 256, size=64 * item, dtype=np.uint8)
        b[:item], a[:item] = 0xFF, 0x00  # -1 against 0 and wrap-around at both ends
        b[item : 2 * item], a[item : 2 * item] = 0x7F, 0x80
        for codec in ("xor", "sub"):
            assert (undiff(diff(b, a, item, codec), a, item, codec) == b).all()
    close = np.array([1.0, -2.5, 3e-8], dtype=np.float32)
    near = np.nextafter(close, np.float32(np.inf)).view(np.uint8)  # one ulp up
    zig = diff(near, close.view(np.uint8), 4, "sub").view(np.uint32)
    assert zig.tolist() == [2, 1, 2]  # +1 ulp -> 2, and for a negative float −1 -> 1


def test_deltas_of_small_updates_are_small(tmp_path: Path):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(256, 256, generator=g)
    store = WeightStore(str(tmp_path), full_every=100)
    full = store.publish({"w": w.bfloat16()}, 1)
    w2 = w * (1 + 1e-3 * torch.randn(w.shape, generator=g))
    delta = store.publish({"w": w2.bfloat16()}, 2)
    assert full["kind"] == "full" and delta["kind"] == "delta"
    assert delta["stored_bytes"] < 0.5 * full["stored_bytes"]
    assert full["full_bytes"] == delta["full_bytes"] == 256 * 256 * 2


def test_store_can_publish_in_the_engines_serving_dtype(store_url: StoreUrl):
    seq = states(torch.float32, n=3)
    store = open_store(store_url, dtype="bfloat16")
    infos = [store.publish(s, v) for v, s in enumerate(seq, start=1)]
    assert [i["kind"] for i in infos] == ["full", "delta", "delta"]
    assert infos[0]["full_bytes"] == sum(t.numel() * 2 for t in seq[0].values())
    for v, s in enumerate(seq, start=1):
        assert_bit_equal(open_store(store_url).fetch(v), {k: t.bfloat16() for k, t in s.items()})


def test_layout_change_forces_a_full_snapshot(tmp_path: Path):
    store = WeightStore(str(tmp_path))
    store.publish({"a": torch.ones(3)}, 1)
    assert store.publish({"a": torch.ones(4)}, 2)["kind"] == "full"
    assert store.publish({"a": torch.ones(4).bfloat16()}, 3)["kind"] == "full"
    assert store.publish({"a": torch.zeros(4).bfloat16()}, 4)["kind"] == "delta"
    assert_bit_equal(WeightStore(str(tmp_path)).fetch(4), {"a": torch.zeros(4).bfloat16()})


def test_corrupt_shard_is_detected(store_url: StoreUrl):
    store = open_store(store_url, shard_bytes=512)
    store.publish(states(torch.float32, 1)[0], 1)
    shard = shard_paths(store, 1)[1]
    blob = bytearray(store.fs.cat_file(shard))
    blob[len(blob) // 2] ^= 0x01
    store.fs.pipe_file(shard, bytes(blob))
    with pytest.raises(WeightStoreError, match="sha256"):
        open_store(store_url).fetch(1)


def test_missing_shard_is_detected(store_url: StoreUrl):
    store = open_store(store_url, shard_bytes=512)
    store.publish(states(torch.float32, 1)[0], 1)
    store.fs.rm(shard_paths(store, 1)[0])
    with pytest.raises(WeightStoreError, match="missing"):
        open_store(store_url).fetch(1)


def test_a_version_without_its_manifest_does_not_exist(store_url: StoreUrl):
    seq = states(torch.bfloat16, 2)
    store = open_store(store_url)
    store.publish(seq[0], 1)
    store.publish(seq[1], 2)
    # A crash after the shards of v2 were written but before its manifest.
    store.fs.rm(f"{store.root}/v00000002/manifest.json")
    reader = open_store(store_url)
    assert reader.versions() == [1] and reader.latest_version() == 1
    with pytest.raises(WeightStoreError, match="not committed"):
        reader.fetch(2)
    assert_bit_equal(reader.fetch(1), seq[0])


def test_ranks_write_their_parts_in_parallel_and_one_commit_publishes_them(store_url: StoreUrl):
    seq = states(torch.float32, n=4)
    owner = owners({k: t.numel() * 4 for k, t in seq[0].items()}, 2)
    assert set(owner.values()) == {0, 1}  # both ranks own something
    ranks = [open_store(store_url, shard_bytes=2000, full_every=3) for _ in range(2)]
    reader = open_store(store_url)
    for v, s in enumerate(seq, start=1):
        parts: list[dict] = [{}, {}]

        def write(r: int, s=s, v=v, parts=parts) -> None:
            parts[r] = ranks[r].write_part({k: t for k, t in s.items() if owner[k] == r}, v, r)

        threads = [threading.Thread(target=write, args=(r,)) for r in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert reader.latest_version() == (v - 1 or None)  # nothing visible before the commit
        info = ranks[0].commit(v, parts)
        assert info["parts"] == 2 and info["kind"] == ("full" if v in (1, 4) else "delta")
        assert_bit_equal(reader.fetch(v), s)
    assert_bit_equal(open_store(store_url).fetch(3), seq[2])  # a fresh reader replays the chain


def test_parts_that_disagree_on_the_base_are_refused(tmp_path: Path):
    a, b = WeightStore(str(tmp_path)), WeightStore(str(tmp_path))
    a.publish({"x": torch.ones(3)}, 1)  # a has a base for v2, b does not
    parts = [a.write_part({"x": torch.zeros(3)}, 2, 0), b.write_part({"y": torch.ones(2)}, 2, 1)]
    with pytest.raises(WeightStoreError, match="disagree"):
        a.commit(2, parts)
    assert a.versions() == [1]


def test_readers_fetch_only_the_shards_that_changed(store_url: StoreUrl):
    g = torch.Generator().manual_seed(0)
    s1 = {name: torch.randn(256, generator=g) for name in "abcd"}  # 1 KiB each: one shard each
    s2 = {**s1, "c": s1["c"] + 1e-3}
    store = open_store(store_url, shard_bytes=1024)
    follower = open_store(store_url)
    assert store.publish(s1, 1)["shards"] == 4
    follower.fetch(1)
    before = dict(follower.fetched)
    info = store.publish(s2, 2)
    assert info["kind"] == "delta" and info["shards"] == 1  # a, b, d unchanged: not written
    assert len(shard_paths(store, 2)) == 1
    assert_bit_equal(follower.fetch(2), s2)
    assert follower.fetched["shards"] - before["shards"] == 1
    assert follower.fetched["bytes"] - before["bytes"] == info["stored_bytes"]


WRITER = """
import json, sys, time
import torch
from shadowrl.rl.weights import WeightStore
url, options, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
g = torch.Generator().manual_seed(0)
state = {f"t{i}": torch.randn(4096, generator=g) for i in range(8)}
store = WeightStore(url, storage_options=options, shard_bytes=16384, threads=1)
store.publish(state, 1)
torch.save(state, out)
opened, real_open = [], store.fs.open
def open_then_stall(path, mode="rb", **kw):
    if "w" in mode and path.endswith(".zst"):
        opened.append(path)
        if len(opened) == 3:  # two shards of v2 are written: stall so the parent kills us
            print("stalled", flush=True)
            time.sleep(600)
    return real_open(path, mode, **kw)
store.fs.open = open_then_stall
store.publish({k: v + 1e-3 for k, v in state.items()}, 2)
"""


@pytest.mark.parametrize("store_url", ["file", "s3"], indirect=True)  # memory:// is per process
def test_a_writer_killed_mid_publish_leaves_no_visible_version(store_url: StoreUrl, tmp_path: Path):
    saved = tmp_path / "v1.pt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [store_url.url, json.dumps(store_url.options), str(saved)]
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, *args], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "stalled"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    reader = open_store(store_url)
    assert len(shard_paths(reader, 2)) == 2  # the killed writer's shards are there ...
    assert reader.versions() == [1]  # ... but v2 never became a version
    with pytest.raises(WeightStoreError, match="not committed"):
        reader.fetch(2)
    v1 = torch.load(saved)
    assert_bit_equal(reader.fetch(1), v1)
    v2 = {k: v + 2e-3 for k, v in v1.items()}  # a restarted writer republishes v2
    open_store(store_url, shard_bytes=16384).publish(v2, 2)
    assert_bit_equal(open_store(store_url).fetch(2), v2)


def test_shuffle_round_trip_piece_plan_and_owners():
    raw = torch.arange(12, dtype=torch.int16).view(torch.uint8).numpy()
    planes = shuffle(raw, 2)
    assert planes[:12].tolist() == list(range(12))  # all low bytes first
    assert (unshuffle(planes, 2) == raw).all()
    pieces = plan_pieces({"a": (10, 2), "b": (30, 4), "c": (0, 4)}, shard_bytes=16)
    for name, total in [("a", 10), ("b", 30)]:
        assert sum(p.nbytes for p in pieces if p.name == name) == total
    assert all(p.nbytes % 2 == 0 for p in pieces)
    assert any(p.name == "c" for p in pieces)
    own = owners({"a": 10, "b": 10, "c": 10, "d": 10}, 2)
    assert own == {"a": 0, "b": 0, "c": 1, "d": 1}  # contiguous, equal bytes
    assert owners({"a": 5}, 3) == {"a": 0}
