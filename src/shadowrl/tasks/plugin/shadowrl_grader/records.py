"""The outcome file, authenticated: each line carries a MAC under a key the code under test never sees.

The code under test shares the interpreter, and with it every open file descriptor: a
line written to a guessed fd would read like the plugin's own. So each record is

    <hex HMAC-SHA256 of "<seq> <json>"> <seq> <json>

under a per-run key the grader (`tasks/runner.py`) writes to `key` beside the outcome
file. `load_key` reads and deletes that file before any workspace module is imported;
the key then lives only in the `Sink`, which only the audit hook holds (audit hooks
cannot be listed from Python, and `gc`, frames and `ctypes` are vetoed). The reader
counts every line whose MAC does not check as tampering, and `seq` numbers expose
lines cut out or moved.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from collections.abc import Callable
from typing import IO, Any

KEY_FILE = "key"  # beside the outcome file; removed once read


def load_key(outcomes: str) -> bytes:
    """The run's key, from `key` beside `outcomes`, deleted once read."""
    path = os.path.join(os.path.dirname(outcomes), KEY_FILE)
    try:
        with open(path, "rb") as f:
            key = f.read()
        os.unlink(path)
    except OSError as e:
        raise RuntimeError(f"shadowrl grader: no run key at {path}: {e}") from None
    if len(key) < 16:
        raise RuntimeError(f"shadowrl grader: the run key at {path} is too short")
    return key


def mac(key: bytes, head: str) -> str:
    return hmac.new(key, head.encode(), hashlib.sha256).hexdigest()


def _c_mac() -> Callable[[bytes, bytes], str]:
    """HMAC-SHA256 in C when OpenSSL is there: nothing Python the code under test could rebind."""
    try:
        from _hashlib import hmac_digest
    except ImportError:  # pragma: no cover  (CPython without OpenSSL)
        return lambda key, msg: hmac.new(key, msg, hashlib.sha256).hexdigest()
    return lambda key, msg: hmac_digest(key, msg, "sha256").hex()


class Sink:
    """Signed JSON lines to the outcome file, flushed at once; thread-safe.

    Everything it calls is bound when it is made (a C HMAC, `json`'s C string encoder):
    rebinding `json.dumps` or `hmac.new` through the module table changes nothing here."""

    def __init__(self, path: str, key: bytes) -> None:
        self._file: IO[str] = open(path, "x", encoding="utf-8")  # noqa: SIM115  (open for the run)
        self._key = key
        self._seq = 0
        self._lock = threading.Lock()
        self._mac = _c_mac()
        self._dumps = _make_dumps()
        self.finished = False  # the session's exit status is written: no outcome may follow

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            head = f"{self._seq} {self._dumps(record)}"
            self._file.write(f"{self._mac(self._key, head.encode())} {head}\n")
            self._file.flush()
            self._seq += 1


def _make_dumps() -> Callable[[dict[str, Any]], str]:
    """`json.dumps` for the records' flat dicts of str, int and bool, from C parts only."""
    from _json import encode_basestring_ascii as quote

    _type, _str, _int, _bool, _repr, _join = type, str, int, bool, int.__repr__, ", ".join

    def value(v: Any) -> str:
        kind = _type(v)
        if kind is _str:
            return quote(v)
        if kind is _bool:
            return "true" if v else "false"
        if kind is _int:
            return _repr(v)
        return quote(_str(_type(v).__name__))  # never in a record the grader builds

    def dumps(record: dict[str, Any]) -> str:
        return "{" + _join([f"{quote(k)}: {value(v)}" for k, v in record.items()]) + "}"

    return dumps
