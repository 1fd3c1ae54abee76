"""Text bookkeeping for replies: stop strings, streaming hold-back, token offsets.

A reply is cut at its first stop string, and a streamed reply holds back any tail that
could still become one; which tokens are returned follows from where each token's text
ends. Pure functions of text and a tokenizer.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Drop the first stop string and all after it (OpenAI never returns it)."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return (text[: min(hits)], True) if hits else (text, False)


def tokens_for(ends: Sequence[int], n_chars: int) -> int:
    """How many leading tokens lie wholly within the first `n_chars` characters, given
    each token's end offset in the text: a token that straddles the cut (part of a stop
    string) is out, so the returned tokens never spell any of what was cut."""
    return bisect_right(ends, n_chars)


def token_ends(tokenizer: Any, ids: Sequence[int]) -> list[int]:
    """Each token's end offset in the decoded text (pushed one at a time, so O(len))."""
    detok, ends, at = IncrementalDetokenizer(tokenizer), [], 0
    for tid in ids:
        at += len(detok.push([tid]))
        ends.append(at)
    return ends


def held_back(text: str, markers: Sequence[str]) -> int:
    """How many trailing chars could still grow into a marker, so can't be streamed yet."""
    longest = max((len(m) for m in markers), default=1)
    for k in range(min(len(text), longest - 1), 0, -1):
        if any(m.startswith(text[-k:]) for m in markers):
            return k
    return 0


class IncrementalDetokenizer:
    """Text deltas from a growing token list without re-decoding all of it (vLLM's trick).

    A window that starts one emission back keeps leading-space merges right; a trailing
    U+FFFD means a multi-byte character is still incomplete, so nothing is emitted yet.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix = self.read = 0

    def push(self, new_ids: Sequence[int]) -> str:
        self.ids.extend(new_ids)
        before = self.tokenizer.decode(self.ids[self.prefix : self.read], skip_special_tokens=True)
        now = self.tokenizer.decode(self.ids[self.prefix :], skip_special_tokens=True)
        if len(now) <= len(before) or now.endswith("\ufffd"):
            return ""
        self.prefix, self.read = self.read, len(self.ids)
        return now[len(before) :]
