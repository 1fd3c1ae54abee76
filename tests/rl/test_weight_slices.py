"""Publishing from shards: each rank writes rows of every tensor (`Rows`), readers
assemble full tensors; the same store and format as whole tensors (`owners`)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import torch

from shadowrl.rl.dp import chunk_range
from shadowrl.rl.weight_codec import untiled
from shadowrl.rl.weights import Rows, WeightStore, WeightStoreError, owners

from .test_weights import assert_bit_equal, states

SPLIT = {"w": 30, "b": 4, "empty": 0}  # the rows rank 0 holds (rank 1 the rest); w is 64 rows


def rank_parts(state: dict[str, torch.Tensor], split: dict[str, int] = SPLIT) -> list[tuple]:
    """Each rank's (state, rows): rows of every tensor in `split`, other tensors whole
    (owned as replicas own them)."""
    whole = {k: t for k, t in state.items() if k not in split}
    owner = owners({k: t.numel() for k, t in whole.items()}, 2)
    out = []
    for r in range(2):
        mine = {k: t for k, t in whole.items() if owner[k] == r}
        rows = {}
        for k, cut in split.items():
            a, b = (0, cut) if r == 0 else (cut, state[k].shape[0])
            mine[k], rows[k] = state[k][a:b], Rows(a, b, tuple(state[k].shape))
        out.append((mine, rows))
    return out


def publish_sliced(ranks: list[WeightStore], state: dict, version: int, **kw) -> dict:
    parts: list[dict] = [{}, {}]

    def write(r: int) -> None:  # the ranks write at once, as they do in training
        mine, rows = rank_parts(state, **kw)[r]
        parts[r] = ranks[r].write_part(mine, version, r, rows)

    threads = [threading.Thread(target=write, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ranks[0].commit(version, parts)


def test_sliced_parts_read_back_as_the_whole_tensors_publish_across_deltas(tmp_path: Path):
    seq = states(torch.float32, n=4)
    sliced = [WeightStore(str(tmp_path / "rows"), shard_bytes=2000, full_every=3) for _ in "ab"]
    whole = WeightStore(str(tmp_path / "whole"), shard_bytes=2000, full_every=3)
    reader = WeightStore(str(tmp_path / "rows"))
    for v, s in enumerate(seq, start=1):
        info = publish_sliced(sliced, s, v)
        assert info["kind"] == ("full" if v in (1, 4) else "delta") and info["parts"] == 2
        whole.publish(s, v)
        got = reader.fetch(v)  # follows along: applies each delta to its last fetch
        assert_bit_equal(got, s)
        assert_bit_equal(got, WeightStore(str(tmp_path / "whole")).fetch(v))
    assert_bit_equal(WeightStore(str(tmp_path / "rows")).fetch(3), seq[2])  # replays 1, 2, 3
    m = json.loads((tmp_path / "rows" / "v00000003" / "manifest.json").read_text())
    assert m["slices"] == {"w": [[0, 0, 30], [1, 30, 64]], "b": [[0, 0, 4], [1, 4, 7]],
                           "empty": [[0, 0, 0], [1, 0, 0]]}  # fmt: skip
    assert m["tensors"]["w"] == ["float32", [64, 33]]  # the full shape, once
    w = [pc for pc in m["pieces"] if pc[0] == "w"]
    assert {m["shards"][pc[3]]["part"] for pc in w} == {0, 1}


def test_rows_that_do_not_tile_a_tensor_are_refused_at_commit(tmp_path: Path):
    s = states(torch.float32, n=1)[0]
    ranks = [WeightStore(str(tmp_path)) for _ in "ab"]
    (m0, r0), (m1, r1) = rank_parts(s)

    def rank1_from(row: int) -> dict:
        rows = {**r1, "w": Rows(row, 64, (64, 33))}
        return ranks[1].write_part({**m1, "w": s["w"][row:]}, 1, 1, rows)

    parts = [ranks[0].write_part(m0, 1, 0, r0), rank1_from(31)]  # row 30 is nobody's
    with pytest.raises(WeightStoreError, match="rows of w leave nothing at 30"):
        ranks[0].commit(1, parts)
    parts[1] = rank1_from(29)
    with pytest.raises(WeightStoreError, match="rows of w leave overlap at 29"):
        ranks[0].commit(1, parts)
    assert ranks[0].versions() == []
    with pytest.raises(ValueError, match="not rows 0:30"):  # the slice is not what rows say
        ranks[0].write_part({"w": s["w"][:31]}, 1, 0, {"w": Rows(0, 30, (64, 33))})


def test_a_missing_or_corrupt_piece_fails_the_fetch(tmp_path: Path):
    s = states(torch.float32, n=1)[0]
    publish_sliced([WeightStore(str(tmp_path), shard_bytes=600) for _ in "ab"], s, 1)
    path = tmp_path / "v00000001" / "manifest.json"
    m = json.loads(path.read_text())
    lost = next(  # a piece of rank 1's rows of w
        i for i, pc in enumerate(m["pieces"]) if pc[0] == "w" and m["shards"][pc[3]]["part"] == 1
    )
    path.write_text(json.dumps({**m, "pieces": m["pieces"][:lost] + m["pieces"][lost + 1 :]}))
    with pytest.raises(WeightStoreError, match="pieces of w leave nothing at"):
        WeightStore(str(tmp_path)).fetch(1)
    path.write_text(json.dumps(m))
    blob = tmp_path / "v00000001" / m["shards"][m["pieces"][lost][3]]["file"]
    data = bytearray(blob.read_bytes())
    data[-1] ^= 1
    blob.write_bytes(bytes(data))
    with pytest.raises(WeightStoreError, match="sha256"):
        WeightStore(str(tmp_path)).fetch(1)
    blob.unlink()
    with pytest.raises(WeightStoreError, match="missing"):
        WeightStore(str(tmp_path)).fetch(1)


def test_chunks_split_as_torch_chunk_with_empty_tails():
    # FSDP2 and DTensor's Shard(0) split dim 0 as torch.chunk, padding with empty chunks
    for n, parts in [(5, 4), (7, 2), (64, 2), (1, 3), (0, 2), (8, 8)]:
        chunks = list(torch.arange(n).chunk(parts)) if n else []
        for i in range(parts):
            a, b = chunk_range(0, n, parts, i)
            expect = chunks[i].tolist() if i < len(chunks) else []
            assert list(range(a, b)) == expect, (n, parts, i)


def test_untiled_names_the_first_gap_overlap_or_overrun():
    assert untiled([(3, 5), (0, 3), (5, 5)], 5) is None  # any order; empty spans ignored
    assert untiled([], 0) is None
    assert untiled([(0, 3)], 5) == "nothing at 3 of 5"
    assert untiled([(1, 5)], 5) == "nothing at 0"
    assert untiled([(0, 3), (2, 5)], 5) == "overlap at 2"
    assert untiled([(0, 3), (3, 6)], 5) == "an end at 6 past 5"
