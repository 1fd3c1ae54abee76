"""Weight store: bit-exact delta round trips, corruption and atomicity checks."""

from pathlib import Path

import pytest
import torch

from shadowrl.rl.weights import WeightStore, WeightStoreError, plan_pieces, shuffle, unshuffle


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


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_delta_round_trip_is_bit_exact(tmp_path: Path, dtype: torch.dtype):
    seq = states(dtype)
    store = WeightStore(str(tmp_path), full_every=3, shard_bytes=1000)
    kinds = [store.publish(s, v)["kind"] for v, s in enumerate(seq, start=1)]
    assert kinds == ["full", "delta", "delta", "full", "delta"]
    assert store.latest_version() == len(seq)
    # A fresh reader replays from the nearest full snapshot.
    for v, s in enumerate(seq, start=1):
        assert_bit_equal(WeightStore(str(tmp_path)).fetch(v), s)
    # An engine holding v1 applies only the deltas after it.
    reader = WeightStore(str(tmp_path))
    assert_bit_equal(reader.fetch(3, seq[1], base_version=2), seq[2])
    # A reader that follows along reuses its last fetch as the base.
    follower = WeightStore(str(tmp_path))
    for v, s in enumerate(seq, start=1):
        assert_bit_equal(follower.fetch(v), s)


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


def test_store_can_publish_in_the_engines_serving_dtype(tmp_path: Path):
    seq = states(torch.float32, n=3)
    store = WeightStore(str(tmp_path), dtype="bfloat16")
    infos = [store.publish(s, v) for v, s in enumerate(seq, start=1)]
    assert [i["kind"] for i in infos] == ["full", "delta", "delta"]
    assert infos[0]["full_bytes"] == sum(t.numel() * 2 for t in seq[0].values())
    for v, s in enumerate(seq, start=1):
        assert_bit_equal(
            WeightStore(str(tmp_path)).fetch(v), {k: t.bfloat16() for k, t in s.items()}
        )


def test_layout_change_forces_a_full_snapshot(tmp_path: Path):
    store = WeightStore(str(tmp_path))
    store.publish({"a": torch.ones(3)}, 1)
    assert store.publish({"a": torch.ones(4)}, 2)["kind"] == "full"
    assert store.publish({"a": torch.ones(4).bfloat16()}, 3)["kind"] == "full"
    assert store.publish({"a": torch.zeros(4).bfloat16()}, 4)["kind"] == "delta"
    assert_bit_equal(WeightStore(str(tmp_path)).fetch(4), {"a": torch.zeros(4).bfloat16()})


def test_corrupt_shard_is_detected(tmp_path: Path):
    store = WeightStore(str(tmp_path), shard_bytes=512)
    store.publish(states(torch.float32, 1)[0], 1)
    shard = sorted((tmp_path / "v00000001").glob("shard-*.zst"))[1]
    blob = bytearray(shard.read_bytes())
    blob[len(blob) // 2] ^= 0x01
    shard.write_bytes(bytes(blob))
    with pytest.raises(WeightStoreError, match="sha256"):
        WeightStore(str(tmp_path)).fetch(1)


def test_missing_shard_is_detected(tmp_path: Path):
    store = WeightStore(str(tmp_path), shard_bytes=512)
    store.publish(states(torch.float32, 1)[0], 1)
    sorted((tmp_path / "v00000001").glob("shard-*.zst"))[0].unlink()
    with pytest.raises(WeightStoreError, match="missing"):
        WeightStore(str(tmp_path)).fetch(1)


def test_a_version_without_its_manifest_does_not_exist(tmp_path: Path):
    seq = states(torch.bfloat16, 2)
    store = WeightStore(str(tmp_path))
    store.publish(seq[0], 1)
    store.publish(seq[1], 2)
    # Simulate a crash after the shards of v2 were written but before its manifest.
    (tmp_path / "v00000002" / "manifest.json").unlink()
    reader = WeightStore(str(tmp_path))
    assert reader.versions() == [1] and reader.latest_version() == 1
    with pytest.raises(WeightStoreError, match="not committed"):
        reader.fetch(2)
    assert_bit_equal(reader.fetch(1), seq[0])


def test_shuffle_round_trip_and_piece_plan():
    raw = torch.arange(12, dtype=torch.int16).view(torch.uint8).numpy()
    planes = shuffle(raw, 2)
    assert planes[:12].tolist() == list(range(12))  # all low bytes first
    assert (unshuffle(planes, 2) == raw).all()
    pieces = plan_pieces({"a": (10, 2), "b": (30, 4), "c": (0, 4)}, shard_bytes=16)
    for name, total in [("a", 10), ("b", 30)]:
        assert sum(p.nbytes for p in pieces if p.name == name) == total
    assert all(p.nbytes % 2 == 0 for p in pieces)
    assert any(p.name == "c" for p in pieces)
