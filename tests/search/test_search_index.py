"""SemanticIndex: ranking, forking with `updated`, and the on-disk cache."""

import numpy as np
import pytest
from conftest import WORKSPACE, CountingEmbedder

from shadowrl.search import (
    ChunkConfig,
    SemanticIndex,
    build_or_load_index,
    chunk_file,
    get_embedder,
    index_cache_key,
)


def _top(index: SemanticIndex, query: str) -> str:
    return index.search(query, k=1)[0].symbol


@pytest.fixture(scope="module")
def minilm_index(minilm) -> SemanticIndex:
    return SemanticIndex.build(WORKSPACE, minilm)


@pytest.mark.parametrize(
    ("query", "symbol"),
    [
        ("function that validates checksum of bytes", "compute_checksum"),
        ("convert a string into a calendar day", "parse_date"),
        ("deliver a message to someone's inbox", "send_email"),
        ("remove stale entries when storage is full", "Cache.evict_oldest"),
    ],
)
def test_minilm_ranks_the_meant_function_first(minilm_index, query, symbol):
    hits = minilm_index.search(query, k=3)
    assert hits[0].symbol == symbol
    assert hits[0].score > hits[1].score


def test_hash_embedder_finds_keyword_matches(hashed):
    index = SemanticIndex.build(WORKSPACE, hashed)
    assert _top(index, "checksum of data") == "compute_checksum"
    assert _top(index, "smtp email") == "send_email"
    assert _top(index, "parse dates") == "parse_date"


def test_hits_carry_location_and_source(hashed):
    index = SemanticIndex.build(WORKSPACE, hashed)
    hit = index.search("compute checksum crc32", k=1)[0]
    lines = WORKSPACE[hit.path].splitlines()
    assert (hit.path, hit.start_line, hit.end_line) == ("app/integrity.py", 5, 7)
    assert hit.text == "\n".join(lines[4:7])
    assert -1.0 <= hit.score <= 1.0


def test_search_edge_cases(hashed):
    index = SemanticIndex.build(WORKSPACE, hashed)
    assert index.search("anything", k=0) == []
    assert len(index.search("anything", k=1000)) == len(index)
    assert SemanticIndex.build({}, hashed).search("anything") == []
    scores = [h.score for h in index.search("cache", k=len(index))]
    assert scores == sorted(scores, reverse=True)


def test_updated_reembeds_only_changed_files(minilm):
    counting = CountingEmbedder(minilm)
    base = SemanticIndex.build(WORKSPACE, counting)
    counting.texts.clear()
    new_mail = WORKSPACE["app/mail.py"].replace("send_email", "send_newsletter")
    added = "def hash_password(pw: str) -> str:\n    return pw[::-1]\n"
    fork = base.updated(
        {
            "app/mail.py": new_mail,
            "app/dates.py": None,
            "app/integrity.py": WORKSPACE["app/integrity.py"],  # unchanged text: reused
            "app/auth.py": added,
        }
    )
    expected = len(chunk_file("app/mail.py", new_mail)) + len(chunk_file("app/auth.py", added))
    assert len(counting.texts) == expected
    assert all(t.startswith(("app/mail.py ", "app/auth.py ")) for t in counting.texts)
    assert "app/dates.py" not in fork.paths and "app/auth.py" in fork.paths
    assert "app/dates.py" in base.paths  # the snapshot's index is untouched
    # The fork answers exactly as an index built from scratch over its files would.
    files = {**WORKSPACE, "app/mail.py": new_mail, "app/auth.py": added}
    del files["app/dates.py"]
    fresh = SemanticIndex.build(files, minilm)
    query = "send a newsletter by mail"
    got, want = fork.search(query, k=len(fork)), fresh.search(query, k=len(fresh))
    assert [(h.path, h.start_line, h.symbol) for h in got] == [
        (h.path, h.start_line, h.symbol) for h in want
    ]
    np.testing.assert_allclose([h.score for h in got], [h.score for h in want], atol=1e-5)


def test_save_load_round_trip(tmp_path, hashed):
    index = SemanticIndex.build(WORKSPACE, hashed, ChunkConfig(max_lines=5))
    index.save(tmp_path / "idx.npz")
    loaded = SemanticIndex.load(tmp_path / "idx.npz")  # embedder resolved by name
    assert loaded.config == index.config and loaded.paths == index.paths
    assert loaded.search("eviction of cache", k=4) == index.search("eviction of cache", k=4)
    # A loaded index forks like a built one: only the changed file is embedded.
    hashed.texts.clear()
    fork = SemanticIndex.load(tmp_path / "idx.npz", hashed).updated({"x.py": "def f():\n  1\n"})
    assert len(hashed.texts) == 1 and len(fork) == len(index) + 1


def test_load_refuses_a_different_embedder(tmp_path, hashed):
    SemanticIndex.build(WORKSPACE, hashed).save(tmp_path / "idx.npz")

    class Other(CountingEmbedder):
        name = "other"

    with pytest.raises(ValueError, match="built with hash"):
        SemanticIndex.load(tmp_path / "idx.npz", Other(get_embedder("hash")))


def test_build_or_load_index_caches_by_content(tmp_path, hashed):
    first = build_or_load_index(WORKSPACE, tmp_path, hashed)
    assert len(hashed.texts) == len(first)
    hashed.texts.clear()
    again = build_or_load_index(dict(reversed(WORKSPACE.items())), tmp_path, hashed)
    assert hashed.texts == [] and again.search("smtp") == first.search("smtp")
    build_or_load_index({**WORKSPACE, "README.md": "changed"}, tmp_path, hashed)
    assert hashed.texts and len(list(tmp_path.glob("*.npz"))) == 2


def test_index_cache_key_depends_on_content_not_order():
    key = index_cache_key(WORKSPACE)
    assert key == index_cache_key(dict(reversed(WORKSPACE.items())))
    assert key != index_cache_key({**WORKSPACE, "README.md": "other"})
    assert key != index_cache_key({f"x/{p}": t for p, t in WORKSPACE.items()})
    assert key != index_cache_key(WORKSPACE, salt="minilm")
