"""Who may do what: API keys for every route, an admin token for `/admin/*`.

Keys live in a JSON file (`serve.api_keys`) that holds only their SHA-256 digests,
never a key itself; `shadowrl keys add` prints a new key once and stores its digest.
A key is a random 256-bit secret, so a plain digest is as hard to reverse as the key
is to guess (no slow password hash needed). The file looks like:

    {"keys": [{"id": "key-1f2e3d4c", "name": "alice", "sha256": "<64 hex>",
               "private": false, "created_at": "2026-12-01T12:00:00+00:00"}]}

With keys on, every API route needs `Authorization: Bearer <key>` (401 otherwise) and
the caller is the key's `id`: sessions, requests and feedback are recorded under it,
and a key sees only its own sessions (another key's id is a 404, as if it did not
exist). A `private` key's traffic is served but never recorded, so it can never be
exported for training. The server re-reads the file when it changes (looked at most
once a second), so `keys add` and `keys revoke` take effect without a restart.
Without a key file the server is open and every caller is anonymous (`key_id=None`).

`/admin/*` needs `serve.admin_token`; without one, admin is refused (403), never open.
The admin token is also taken wherever a key is: the operator's requests are recorded
without a key id and it sees every session (what a reviewer on `/ui` needs). The checks
themselves are the app's route dependencies (`app.py::Auth`); this module is the key
file, the ring the server reads it through, and the `Caller` a request is recorded under.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import threading
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from shadowrl.atomic import write_file

KEY_PREFIX = "srl-"
RELOAD_EVERY_S = 1.0


class KeyFileError(ValueError):
    """The key file is not what `shadowrl keys` writes."""


@dataclass(frozen=True)
class StoredKey:
    """One entry of the key file: a key's identity and digest, never the key."""

    id: str
    name: str
    sha256: str
    private: bool = False
    created_at: str = ""


@dataclass(frozen=True)
class Caller:
    """Who sent a request: a key's id (None: keys are off) and whether it is private."""

    key_id: str | None = None
    private: bool = False

    def may_see(self, owner: str | None) -> bool:
        """Whether a session recorded under key `owner` is this caller's to see."""
        return self.key_id is None or owner == self.key_id


ANONYMOUS = Caller()  # keys off: every caller sees every session
ADMIN = Caller()  # the admin token, accepted wherever a key is: the operator sees all


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def read_keys(path: Path) -> list[StoredKey]:
    """The keys in `path` (a missing file holds none)."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KeyFileError(f"{path}: not a key file: {e}") from e
    try:
        return [StoredKey(**entry) for entry in raw["keys"]]
    except (KeyError, TypeError) as e:
        raise KeyFileError(f"{path}: expected {{'keys': [{{id, name, sha256, ...}}]}}") from e


def private_key_ids(path: Path) -> frozenset[str]:
    """The ids of `path`'s private keys: what exports and real-time cycles leave out."""
    return frozenset(k.id for k in read_keys(path) if k.private)


def write_keys(path: Path, keys: list[StoredKey]) -> None:
    """Replace the file atomically (a reader never sees half of it), readable by owner only."""
    text = json.dumps({"keys": [asdict(k) for k in keys]}, indent=2) + "\n"
    write_file(path, text, mode=0o600)


def add_key(path: Path, name: str, private: bool = False) -> tuple[StoredKey, str]:
    """Create a key, store its digest in `path`; returns (entry, the key: shown once)."""
    keys = read_keys(path)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    entry = StoredKey(
        f"key-{secrets.token_hex(4)}", name, digest(key), private, datetime.now(UTC).isoformat()
    )
    write_keys(path, [*keys, entry])
    return entry, key


def revoke_key(path: Path, key_id: str) -> StoredKey:
    """Remove key `key_id` from `path`; KeyError if there is none."""
    keys = read_keys(path)
    gone = [k for k in keys if k.id == key_id]
    if not gone:
        raise KeyError(key_id)
    write_keys(path, [k for k in keys if k.id != key_id])
    return gone[0]


class KeyRing:
    """The key file as the server sees it: digests in memory, reloaded when it changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._mtime: int | None = None
        self._checked = 0.0
        self._by_digest: dict[str, StoredKey] = {}
        self._load()

    def _load(self) -> None:
        try:
            mtime: int | None = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = None
        if mtime != self._mtime:
            self._by_digest = {k.sha256: k for k in read_keys(self.path)}
            self._mtime = mtime

    def lookup(self, key: str) -> StoredKey | None:
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= RELOAD_EVERY_S:
                self._checked = now
                with contextlib.suppress(KeyFileError):  # mid-edit: keep the last good keys
                    self._load()
            return self._by_digest.get(digest(key))
