"""Where speculative drafts come from: MTP heads, or n-grams of the request's own context.

A drafter proposes up to k tokens per running row; `spec_step.SpeculativeStep` verifies
them in one forward of the main model and keeps the leading ones its acceptance rule
accepts, so whatever a drafter proposes, the output is the main model's (exact rule:
token for token the non-speculative output).

- `MtpDrafter`: the draft heads guess the next k tokens from the hidden state at the
  last accepted position, right after the verify that produced it (device side).
- `NgramDrafter` (prompt-lookup decoding): the newest n tokens of the request's own
  prompt + completion are looked up among its earlier tokens, and the k tokens that
  followed their latest earlier occurrence are the draft. Free (a dictionary lookup on
  the host) and strong on agent traffic, which re-reads files into its context, edits
  by quoting them and repeats tool-call syntax. A row with no match proposes nothing;
  a step where no row has a draft decodes plainly.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Protocol

from torch import Tensor

from shadowrl.inference.forward import Decoder
from shadowrl.inference.mtp import MTPHeads
from shadowrl.inference.requests import Request
from shadowrl.inference.sampling import BatchSampling
from shadowrl.inference.speculative import DRAFT_SALT, draft


class Drafter(Protocol):
    """Proposes up to `k` draft tokens per running request."""

    k: int
    fixed: bool  # True: every step verifies exactly k drafts per row (a stand-in if none)

    def proposals(self, requests: Sequence[Request]) -> list[tuple[int, ...]]:
        """Drafts for this step's verify, up to k per row; () where there is none."""

    def follow(
        self, hidden: Tensor, token: Tensor, params: BatchSampling, version: int
    ) -> tuple[Tensor | None, Tensor | None]:
        """The next step's drafts [B, k] (and, for rejection sampling, their distributions)
        made from the verify's hidden states [B, H] at each row's newest token [B], or
        (None, None) when drafts come from the host."""


class MtpDrafter:
    """The MTP heads (`mtp.py`), drafting from the backbone's last accepted state."""

    fixed = True

    def __init__(self, heads: MTPHeads, decoder: Decoder, k: int, rejection: bool) -> None:
        if not 1 <= k <= heads.k:
            raise ValueError(f"speculative k={k} needs 1 <= k <= the heads' count {heads.k}")
        self.heads, self.decoder, self.k, self.rejection = heads, decoder, k, rejection
        self._rows: tuple[int, Tensor] | None = None  # (version, the LM-head rows drafts use)

    def proposals(self, requests: Sequence[Request]) -> list[tuple[int, ...]]:
        return [r.draft if len(r.draft) == self.k else () for r in requests]

    def follow(
        self, hidden: Tensor, token: Tensor, params: BatchSampling, version: int
    ) -> tuple[Tensor | None, Tensor | None]:
        return draft(
            self.heads, self.decoder, hidden, token, params, k=self.k,
            salt=DRAFT_SALT if self.rejection else 0, keep_distributions=self.rejection,
            rows=self.draft_rows(version),
        )  # fmt: skip

    def draft_rows(self, version: int) -> Tensor:
        """The LM-head rows the heads score, gathered once per weights version."""
        if self._rows is None or self._rows[0] != version:
            self._rows = (version, self.heads.draft_rows(self.decoder.lm_head.weight))
        return self._rows[1]


class NgramIndex:
    """One request's context: each n-gram (n in [shortest, longest]) -> where it last ended."""

    def __init__(self, longest: int, shortest: int) -> None:
        self.longest, self.shortest = longest, shortest
        self.ends: dict[tuple[int, ...], int] = {}
        self.indexed = 0  # n-grams ending at positions < indexed are in `ends`

    def lookup(self, context: Sequence[int], k: int) -> tuple[int, ...]:
        """The k tokens (or fewer) after the latest earlier occurrence of the longest
        suffix of `context` that occurred before; () if none did."""
        end = len(context)
        for e in range(max(self.indexed, self.shortest), end):  # every n-gram but the suffix
            for n in range(self.shortest, min(self.longest, e) + 1):
                self.ends[tuple(context[e - n : e])] = e
        self.indexed = max(self.indexed, end)
        for n in range(min(self.longest, end), self.shortest - 1, -1):
            at = self.ends.get(tuple(context[end - n :]))
            if at is not None:
                return tuple(context[at : at + k])
        return ()


class NgramDrafter:
    """Prompt-lookup drafts: the continuation of the context's latest matching n-gram."""

    fixed = False

    def __init__(self, k: int, longest: int, shortest: int) -> None:
        if not 1 <= shortest <= longest:
            raise ValueError(f"n-gram lengths need 1 <= {shortest} <= {longest}")
        self.k, self.longest, self.shortest = k, longest, shortest
        self._index: weakref.WeakKeyDictionary[Request, NgramIndex] = weakref.WeakKeyDictionary()

    def proposals(self, requests: Sequence[Request]) -> list[tuple[int, ...]]:
        return [self._of(r).lookup(r.prompt + tuple(r.tokens), self.k) for r in requests]

    def follow(
        self, hidden: Tensor, token: Tensor, params: BatchSampling, version: int
    ) -> tuple[Tensor | None, Tensor | None]:
        return None, None

    def _of(self, request: Request) -> NgramIndex:
        index = self._index.get(request)
        if index is None:
            index = self._index[request] = NgramIndex(self.longest, self.shortest)
        return index
