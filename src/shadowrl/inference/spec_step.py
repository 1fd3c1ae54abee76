"""The engine's speculative decode step: pack the rows, verify, accept, draft, one sync.

The device side is `speculative.py`'s pure functions; this class feeds them from the
running requests (as `step.EagerStep` does for a plain step) and brings every row's
accepted tokens, logprobs and next drafts back in one device->host copy. It runs
eagerly on every device (no CUDA graph: a verify's shapes change with k and the batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from shadowrl.inference.forward import Decoder
from shadowrl.inference.kv import KVCache
from shadowrl.inference.mtp import MTPHeads
from shadowrl.inference.requests import Request
from shadowrl.inference.sampling import top_alternatives
from shadowrl.inference.speculative import DRAFT_SALT, RULES, draft, per_position, shifted
from shadowrl.inference.step import StepBuffers, flags, top_count
from shadowrl.types import TopLogprobs


@dataclass(frozen=True)
class RowResult:
    """One row's new tokens (1..k+1) with the main model's logprobs, and its next drafts."""

    ids: list[int]
    logprobs: list[float]
    top: list[TopLogprobs] | None
    draft: tuple[int, ...]
    draft_logq: Tensor | None


class SpeculativeStep:
    """Verify k drafts per running request and draft the next k, in one forward + heads."""

    def __init__(
        self, decoder: Decoder, heads: MTPHeads, cache: KVCache, k: int, acceptance: str, rows: int
    ) -> None:
        if not 1 <= k <= heads.k:
            raise ValueError(f"speculative k={k} needs 1 <= k <= the heads' count {heads.k}")
        self.decoder, self.heads, self.cache, self.k = decoder, heads, cache, k
        self.rejection = acceptance == "rejection"
        self.rule = RULES[acceptance]
        self.host = StepBuffers.allocate(rows, torch.device("cpu"))

    def run(self, requests: Sequence[Request], span: int) -> list[RowResult]:
        """One step for the requests in slots 0..n-1; `span` > every cached length + k."""
        n, k, top = len(requests), self.k, top_count(requests)
        device = self.cache.keys[0].device
        self.host.fill(requests, n)
        ints, floats = self.host.ints[:n].to(device), self.host.floats[:n].to(device)
        buffers = StepBuffers(ints, floats)
        sampled, filtered = flags(requests)
        _, lengths, params = buffers.inputs(n, sampled=sampled, filtered=filtered)
        drafts = torch.tensor([self._draft_of(r) for r in requests], device=device)
        tokens = torch.cat((ints[:, :1], drafts), dim=1)
        logq = self._draft_logq(requests, drafts) if self.rejection else None
        hidden = self.decoder.extend(tokens, lengths, self.cache, span)
        logits = self.decoder.lm_head(hidden)
        verified = self.rule(drafts, logq, logits, params)
        rows = torch.arange(n, device=device)
        last = verified.accepted
        salt = DRAFT_SALT if self.rejection else 0
        nxt, nxt_logq = draft(
            self.heads, self.decoder, hidden[rows, last], verified.ids[rows, last],
            shifted(params, last + 1), k=k, salt=salt, keep_distributions=self.rejection,
        )  # fmt: skip
        parts = [verified.ids, verified.logprobs, last[:, None], nxt]
        if top:
            b, t, v = logits.shape
            alt_ids, alt_lps = top_alternatives(
                logits.reshape(b * t, v), per_position(params, t), top
            )
            parts += [alt_ids.view(b, -1), alt_lps.view(b, -1)]
        host = torch.cat([p.double() for p in parts], dim=1).cpu()
        return [self._row(host[i], nxt_logq, i, top) for i in range(n)]

    def _row(self, host: Tensor, logq: Tensor | None, i: int, top: int) -> RowResult:
        t, k = self.k + 1, self.k
        accepted = int(host[2 * t])
        count = accepted + 1
        ids = [int(x) for x in host[:count].tolist()]
        logprobs = host[t : t + count].tolist()
        draft_ids = tuple(int(x) for x in host[2 * t + 1 : 2 * t + 1 + k].tolist())
        tops = None
        if top:
            base = 2 * t + 1 + k
            alt_ids = host[base : base + t * top].view(t, top).tolist()
            alt_lps = host[base + t * top : base + 2 * t * top].view(t, top).tolist()
            tops = [  # a filtered-out token (-inf) could not have been drawn: not an alternative
                tuple((int(a), lp) for a, lp in zip(ai, al, strict=True) if lp > float("-inf"))
                for ai, al in zip(alt_ids[:count], alt_lps[:count], strict=True)
            ]
        return RowResult(ids, logprobs, tops, draft_ids, None if logq is None else logq[i])

    def _draft_of(self, request: Request) -> list[int]:
        """The request's drafts, or its newest token repeated (a guess verified like any)."""
        if len(request.draft) == self.k:
            return list(request.draft)
        return [request.tokens[-1]] * self.k

    def _draft_logq(self, requests: Sequence[Request], drafts: Tensor) -> Tensor:
        """[n, k, V]: each row's draft distributions; a stand-in draft is a point mass."""
        v = self.decoder.lm_head.out_features
        point = torch.full((len(requests), self.k, v), float("-inf"), device=drafts.device)
        point.scatter_(-1, drafts[..., None], 0.0)
        rows = [r.draft_logq if r.draft_logq is not None and len(r.draft) == self.k else point[i]
                for i, r in enumerate(requests)]  # fmt: skip
        return torch.stack(rows)
