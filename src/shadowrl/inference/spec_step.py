"""The engine's speculative decode step: pack the rows, verify, accept, draft, one sync.

Drafts come from a `drafters.Drafter` (MTP heads or the request's own n-grams).

The device side is `speculative.py`'s pure functions; this class feeds them from the
running requests (as `step.EagerStep` does for a plain step) and brings every row's
accepted tokens, logprobs and next drafts back in one device->host copy. It runs
eagerly on every device (no CUDA graph: a verify's shapes change with k and the batch).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.drafters import Drafter, MtpDrafter, NgramDrafter
from shadowrl.inference.forward import Decoder
from shadowrl.inference.kv import KVCache
from shadowrl.inference.mtp import PREFIX, MTPHeads
from shadowrl.inference.requests import Request
from shadowrl.inference.sampling import top_alternatives
from shadowrl.inference.speculative import RULES, per_position, shifted
from shadowrl.inference.step import StepBuffers, flags, top_count
from shadowrl.types import TopLogprobs


class Payoff:
    """Measured seconds per generated token, speculating or not, per batch size.

    The engine speculates at a batch size while that is measured to be cheaper per
    token than plain decoding; each side is (re)measured at first and then once every
    `probe` steps, so a choice follows the acceptance rate and the machine's load.
    """

    def __init__(self, probe: int = 32, decay: float = 0.8) -> None:
        self.cost: dict[tuple[bool, int], float] = {}
        self.steps: dict[int, int] = {}
        self.probe, self.decay = probe, decay

    def choose(self, rows: int) -> bool:
        n = self.steps.get(rows, 0)
        self.steps[rows] = n + 1
        spec, plain = self.cost.get((True, rows)), self.cost.get((False, rows))
        if spec is None or plain is None:
            return spec is None  # measure speculation first, then plain decoding
        if n % self.probe == 0:  # refresh the side not taken
            return spec > plain
        return spec < plain

    def record(self, speculated: bool, rows: int, tokens: int, seconds: float) -> None:
        per_token = seconds / max(tokens, 1)
        key = (speculated, rows)
        old = self.cost.get(key)
        self.cost[key] = (
            per_token if old is None else self.decay * old + (1 - self.decay) * per_token
        )


@dataclass(frozen=True)
class RowResult:
    """One row's new tokens (1..k+1) with the main model's logprobs and entropies, and its
    next drafts."""

    ids: list[int]
    logprobs: list[float]
    entropies: list[float]
    top: list[TopLogprobs] | None
    draft: tuple[int, ...]
    draft_logq: Tensor | None


class SpeculativeStep:
    """Verify each running request's drafts in one forward, accept, and draft again."""

    def __init__(
        self,
        decoder: Decoder,
        drafter: Drafter,
        cache: KVCache,
        acceptance: str,
        *,
        rows: int,
        max_batch: int,
        max_seq_len: int,
        auto: bool = False,
    ) -> None:
        self.decoder, self.drafter, self.cache, self.k = decoder, drafter, cache, drafter.k
        self.rejection = acceptance == "rejection"
        self.rule = RULES[acceptance]
        self.host = StepBuffers.allocate(rows, torch.device("cpu"))
        self.max_batch, self.max_seq_len = max_batch, max_seq_len
        self.accepted = [0] * (self.k + 1)  # steps' rows by drafts accepted (0..k)
        self.payoff = Payoff() if auto else None

    @property
    def heads(self) -> MTPHeads | None:
        """The MTP draft heads, if drafts come from them."""
        return self.drafter.heads if isinstance(self.drafter, MtpDrafter) else None

    def pays(self, requests: Sequence[Request], span: int) -> bool:
        """Whether to speculate this step: a batch small enough (`speculative.max_batch`),
        room for k more positions, some row with a draft, and (with `auto`) measured to
        beat plain decoding."""
        rows = len(requests)
        fits = rows <= self.max_batch and span + self.k <= self.max_seq_len
        drafted = fits and (self.drafter.fixed or any(self.drafter.proposals(requests)))
        return drafted and (self.payoff is None or self.payoff.choose(rows))

    def decode(self, requests: Sequence[Request], span: int, version: int, tokenizer: Any) -> None:
        """One step for the running requests: their tokens appended (1..k+1 each)."""
        start = time.perf_counter()
        cached = [r.cached for r in requests]
        self.cache.prepare(range(len(requests)), cached, [n + 1 + self.k for n in cached])
        results = self.run(requests, span + self.k, version)
        for request, result in zip(requests, results, strict=True):
            append_accepted(request, result, version, self.max_seq_len, tokenizer)
        if self.payoff is not None:
            gained = sum(len(r.ids) for r in results)
            self.payoff.record(True, len(requests), gained, time.perf_counter() - start)

    @contextlib.contextmanager
    def timing_plain(self, rows: int) -> Iterator[None]:
        """Times a plain decode step (one token per row), for the `auto` comparison."""
        start = time.perf_counter()
        yield
        if self.payoff is not None:
            self.payoff.record(False, rows, rows, time.perf_counter() - start)

    def run(self, requests: Sequence[Request], span: int, version: int = -1) -> list[RowResult]:
        """One step for the requests in slots 0..n-1; `span` > every cached length + k."""
        n, top = len(requests), top_count(requests)
        device = self.cache.device
        self.host.fill(requests, n)
        ints, floats = self.host.ints[:n].to(device), self.host.floats[:n].to(device)
        buffers = StepBuffers(ints, floats)
        sampled, filtered = flags(requests)
        _, lengths, params = buffers.inputs(n, sampled=sampled, filtered=filtered)
        proposed = self.drafter.proposals(requests)
        k = self.k if self.drafter.fixed else max(1, max(len(p) for p in proposed))
        drafts = torch.tensor(  # a row short of k drafts: its newest token, verified like any
            [[*p, *[r.tokens[-1]] * (k - len(p))] for p, r in zip(proposed, requests, strict=True)],
            device=device,
        )
        tokens = torch.cat((ints[:, :1], drafts), dim=1)
        logq = self._draft_logq(requests, drafts) if self.rejection else None
        hidden = self.decoder.extend(tokens, lengths, self.cache, span)
        logits = self.decoder.lm_head(hidden)
        verified = self.rule(drafts, logq, logits, params)
        rows = torch.arange(n, device=device)
        last = verified.accepted
        nxt, nxt_logq = self.drafter.follow(
            hidden[rows, last], verified.ids[rows, last], shifted(params, last + 1), version
        )
        parts = [verified.ids, verified.logprobs, verified.entropies, last[:, None]]
        parts += [] if nxt is None else [nxt]
        if top:
            b, t, v = logits.shape
            alt_ids, alt_lps = top_alternatives(
                logits.reshape(b * t, v), per_position(params, t), top
            )
            parts += [alt_ids.view(b, -1), alt_lps.view(b, -1)]
        host = torch.cat([p.double() for p in parts], dim=1).cpu()
        drafted = 0 if nxt is None else nxt.shape[1]
        results = [self._row(host[i], nxt_logq, i, k, drafted, top) for i in range(n)]
        for result in results:
            self.accepted[len(result.ids) - 1] += 1
        return results

    def _row(
        self, host: Tensor, logq: Tensor | None, i: int, k: int, drafted: int, top: int
    ) -> RowResult:
        t = k + 1
        accepted = int(host[3 * t])
        count = accepted + 1
        ids = [int(x) for x in host[:count].tolist()]
        logprobs = host[t : t + count].tolist()
        entropies = host[2 * t : 2 * t + count].tolist()
        draft_ids = tuple(int(x) for x in host[3 * t + 1 : 3 * t + 1 + drafted].tolist())
        tops = None
        if top:
            base = 3 * t + 1 + drafted
            alt_ids = host[base : base + t * top].view(t, top).tolist()
            alt_lps = host[base + t * top : base + 2 * t * top].view(t, top).tolist()
            tops = [  # a filtered-out token (-inf) could not have been drawn: not an alternative
                tuple((int(a), lp) for a, lp in zip(ai, al, strict=True) if lp > float("-inf"))
                for ai, al in zip(alt_ids[:count], alt_lps[:count], strict=True)
            ]
        logq_i = None if logq is None else logq[i]
        return RowResult(ids, logprobs, entropies, tops, draft_ids, logq_i)

    def _draft_logq(self, requests: Sequence[Request], drafts: Tensor) -> Tensor:
        """[n, k, V]: each row's draft distributions; a stand-in or n-gram draft is a point
        mass."""
        v, k = self.decoder.lm_head.out_features, drafts.shape[1]
        point = torch.full((len(requests), k, v), float("-inf"), device=drafts.device)
        point.scatter_(-1, drafts[..., None], 0.0)
        rows = [r.draft_logq if r.draft_logq is not None and len(r.draft) == k else point[i]
                for i, r in enumerate(requests)]  # fmt: skip
        return torch.stack(rows)


def speculator(
    decoder: Decoder,
    heads: MTPHeads | None,
    cache: KVCache,
    config: EngineConfig,
    tensors: MutableMapping[str, Tensor],
) -> SpeculativeStep:
    """The engine's speculative step (k > 0, and heads for MTP drafts: the caller,
    `speculation.build_speculator`, checks).

    MTP heads' tensors join the engine's swappable `tensors` as `mtp.*`, so a weight
    update (full or delta) carries them along with the model's.
    """
    spec = config.speculative
    drafter: Drafter
    if spec.drafter == "ngram":
        drafter = NgramDrafter(spec.k, spec.ngram_longest, spec.ngram_shortest)
    else:
        assert heads is not None
        param = decoder.lm_head.weight
        heads = heads.to(device=param.device, dtype=param.dtype).eval()
        tensors.update({PREFIX + k: v for k, v in heads.state_dict(keep_vars=True).items()})
        drafter = MtpDrafter(heads, decoder, min(spec.k, heads.k), spec.acceptance == "rejection")
    return SpeculativeStep(
        decoder, drafter, cache, spec.acceptance,
        rows=config.max_batch, max_batch=spec.max_batch, max_seq_len=config.max_seq_len,
        auto=spec.auto,
    )  # fmt: skip


def append_accepted(
    request: Request, result: RowResult, version: int, max_seq_len: int, tokenizer: Any
) -> None:
    """Append a row's accepted tokens, stopping at the first that finishes the request."""
    for i, (token, logprob) in enumerate(zip(result.ids, result.logprobs, strict=True)):
        top = None if result.top is None else result.top[i][: request.sampling.top_logprobs]
        request.append(token, logprob, version, top or None, result.entropies[i])
        if request.finish_reason(max_seq_len, tokenizer) is not None:
            return
    request.draft, request.draft_logq = result.draft, result.draft_logq
