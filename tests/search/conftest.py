"""Shared fixtures: the real MiniLM model is loaded once per test session."""

from collections.abc import Sequence

import numpy as np
import pytest

from shadowrl.search import Embedder, get_embedder


class CountingEmbedder:
    """Wraps a real embedder and records how many texts it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return self.inner.embed(texts)


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    return get_embedder("minilm")


@pytest.fixture
def hashed() -> CountingEmbedder:
    return CountingEmbedder(get_embedder("hash"))


WORKSPACE = {
    "app/dates.py": '''\
"""Date helpers."""
from datetime import datetime


def parse_date(text: str) -> datetime:
    """Parse an ISO-8601 date string such as 2024-05-01 into a datetime."""
    return datetime.strptime(text, "%Y-%m-%d")
''',
    "app/mail.py": '''\
"""Outgoing mail."""
import smtplib


def send_email(to: str, subject: str, body: str) -> None:
    """Deliver a message to a recipient through the SMTP server."""
    with smtplib.SMTP("localhost") as server:
        server.sendmail("noreply@example.com", [to], f"Subject: {subject}\\n\\n{body}")
''',
    "app/integrity.py": '''\
"""Data integrity."""
import zlib


def compute_checksum(data: bytes) -> int:
    """CRC32 of a byte string, used to detect corrupted downloads."""
    return zlib.crc32(data) & 0xFFFFFFFF


class Cache:
    """An in-memory key-value cache with least-recently-used eviction."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: dict[str, bytes] = {}

    def evict_oldest(self) -> None:
        """Drop the least recently used entry when the cache is full."""
        self.items.pop(next(iter(self.items)))
''',
    "README.md": "# app\n\nSmall utilities: dates, mail, integrity checks.\n",
}
