"""One decode step for the running batch, and the packing of requests into its inputs.

The engine asks a `DecodeStep` for the next token of every running request (and for
the first token after a prefill). `EagerStep` runs the forward and the sampler as plain
PyTorch (CPU, or CUDA without graphs); `cuda_graphs.GraphStep` replays the very same
function from captured CUDA graphs. Both read their inputs from one packed pair of
buffers (one column per row) and return tokens, logprobs and entropies (of the
distribution each token was drawn from: `sampling.select_with_entropy`, a reduction over
logits already in hand) stacked in one tensor, so a
step costs one host->device copy in and one device->host copy out: the only point where
the host waits for the device, and it must, to see stops and stream tokens. A step in
which some request asked for its top alternatives (`SamplingParams.top_logprobs`) also
stacks the k best tokens and logprobs per row; steps that ask for none run as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.forward import Decoder
from shadowrl.inference.kv import KVCache
from shadowrl.inference.requests import Request
from shadowrl.inference.sampling import BatchSampling, select_with_entropy, top_alternatives
from shadowrl.types import TopLogprobs

Forward = Callable[[Tensor, Tensor, KVCache, int], Tensor]  # Decoder.decode's signature


@dataclass(frozen=True)
class StepBuffers:
    """Per-row step inputs, packed: ints [R, 5] and floats [R, 2] on one device.

    Row-major, so the first n rows are one contiguous block: one plain copy each way.
    """

    ints: Tensor  # columns: token, length (= position of token), top_k, seed, counter
    floats: Tensor  # columns: temperature, top_p

    @classmethod
    def allocate(cls, rows: int, device: torch.device, *, pin: bool = False) -> StepBuffers:
        ints = torch.zeros((rows, 5), dtype=torch.int64, device=device)
        floats = torch.zeros((rows, 2), dtype=torch.float32, device=device)
        return cls(ints.pin_memory(), floats.pin_memory()) if pin else cls(ints, floats)

    def fill(self, requests: Sequence[Request], rows: int) -> None:
        """Write requests into columns 0..n-1 and greedy no-op padding up to `rows` (host)."""
        pad = rows - len(requests)
        ints = [
            [r.tokens[-1] if r.tokens else 0, r.cached, r.sampling.top_k, r.seed, len(r.tokens)]
            for r in requests
        ]
        floats = [[r.sampling.temperature, r.sampling.top_p] for r in requests]
        self.ints[:rows] = torch.tensor(ints + [[0] * 5] * pad, dtype=torch.int64)
        self.floats[:rows] = torch.tensor(floats + [[0.0, 1.0]] * pad)

    def copy_from(self, other: StepBuffers, rows: int) -> None:
        if other is not self:
            self.ints[:rows].copy_(other.ints[:rows], non_blocking=True)
            self.floats[:rows].copy_(other.floats[:rows], non_blocking=True)

    def inputs(
        self, rows: int, *, sampled: bool, filtered: bool
    ) -> tuple[Tensor, Tensor, BatchSampling]:
        """(tokens [rows], lengths [rows], sampling settings) as views of the buffers."""
        ints, floats = self.ints[:rows].T, self.floats[:rows].T
        params = BatchSampling(
            temperature=floats[0],
            top_p=floats[1],
            top_k=ints[2],
            seed=ints[3],
            counter=ints[4],
            sampled=sampled,
            filtered=filtered,
        )
        return ints[0], ints[1], params


def flags(requests: Sequence[Request]) -> tuple[bool, bool]:
    """(any row samples, any row filters by top-k/top-p): host-side, they pick the code path."""
    sampled = any(r.sampling.temperature > 0 for r in requests)
    filtered = any(r.sampling.top_k > 0 or r.sampling.top_p < 1 for r in requests)
    return sampled, filtered


def top_count(requests: Sequence[Request]) -> int:
    """How many alternatives per token this step must record (the most any request asks)."""
    return max((r.sampling.top_logprobs for r in requests), default=0)


@dataclass(frozen=True)
class Picks:
    """One step's result on the host: a token, its logprob and entropy per row, maybe
    alternatives."""

    ids: list[int]
    logprobs: list[float]
    entropies: list[float]
    top: list[TopLogprobs] | None = None  # per row, when some request asked for them

    def top_of(self, row: int, k: int) -> TopLogprobs | None:
        """Row's k best alternatives, or None if that request asked for none."""
        return None if self.top is None or k == 0 else self.top[row][:k]


def stacked(
    ids: Tensor, logprobs: Tensor, entropies: Tensor, top: tuple[Tensor, Tensor] | None = None
) -> Tensor:
    """[3 (+ 2k), B] float64 (token ids are exact below 2**53): one copy brings all back."""
    rows = [ids.double()[None], logprobs.double()[None], entropies.double()[None]]
    if top is not None:
        rows += [top[0].double().T, top[1].double().T]
    return torch.cat(rows)


def picks(out: Tensor, n: int, k: int = 0) -> Picks:
    """The first n rows of a `stacked` result as host lists (the step's one sync)."""
    host = out[:, :n].cpu()
    ids, logprobs, entropies = host[:3].tolist()
    if not k:
        return Picks([int(i) for i in ids], logprobs, entropies)
    top_ids, top_lps = host[3 : 3 + k].T.tolist(), host[3 + k :].T.tolist()
    top = [  # a filtered-out token (-inf) could not have been drawn: not an alternative
        tuple((int(t), lp) for t, lp in zip(ts, lps, strict=True) if lp > float("-inf"))
        for ts, lps in zip(top_ids, top_lps, strict=True)
    ]
    return Picks([int(i) for i in ids], logprobs, entropies, top)


class DecodeStep(Protocol):
    """Samples next tokens for the running requests, which occupy KV slots 0..n-1."""

    def warmup(self) -> None:
        """Prepare before serving (capture graphs); the KV cache holds nothing yet."""

    def decode(self, requests: Sequence[Request], span: int) -> Picks:
        """One forward + sample; `span` > every request's cached length."""

    def sample(self, requests: Sequence[Request], logits: Tensor) -> Picks:
        """Sample one token per request from given logits [n, V] (after a prefill)."""


class EagerStep:
    """Forward and sampling as ordinary PyTorch calls, sized exactly to the batch."""

    def __init__(self, decoder: Decoder, cache: KVCache, config: EngineConfig) -> None:
        self.decoder, self.cache = decoder, cache
        device = cache.device
        cuda = device.type == "cuda"
        self.host = StepBuffers.allocate(config.max_batch, torch.device("cpu"), pin=cuda)
        self.buffers = StepBuffers.allocate(config.max_batch, device) if cuda else self.host

    def warmup(self) -> None:
        pass

    def decode(self, requests: Sequence[Request], span: int) -> Picks:
        cached = [r.cached for r in requests]  # each row writes one position: room, unshared
        self.cache.prepare(range(len(requests)), cached, [n + 1 for n in cached])
        rows, span, top = self._rows(len(requests)), self._span(span), top_count(requests)
        self._load(requests, rows)
        return picks(self._run(rows, span, *flags(requests), top), len(requests), top)

    def sample(self, requests: Sequence[Request], logits: Tensor) -> Picks:
        sampled, filtered = flags(requests)
        self._load(requests, len(requests))
        _, _, params = self.buffers.inputs(len(requests), sampled=sampled, filtered=filtered)
        top = top_count(requests)
        alternatives = top_alternatives(logits, params, top) if top else None
        chosen = select_with_entropy(logits, params)
        return picks(stacked(*chosen, alternatives), len(requests), top)

    def _rows(self, n: int) -> int:
        return n

    def _span(self, span: int) -> int:
        return span

    def _load(self, requests: Sequence[Request], rows: int) -> None:
        self.host.fill(requests, rows)
        self.buffers.copy_from(self.host, rows)

    def _run(self, rows: int, span: int, sampled: bool, filtered: bool, top: int = 0) -> Tensor:
        return decode_and_sample(
            self.decoder, self.cache, self.buffers, rows, span, sampled, filtered, top=top
        )


@torch.inference_mode()
def decode_and_sample(
    decoder: Decoder,
    cache: KVCache,
    buffers: StepBuffers,
    rows: int,
    span: int,
    sampled: bool,
    filtered: bool,
    forward: Forward | None = None,
    top: int = 0,
) -> Tensor:
    """The whole device side of a decode step: forward, sample, stack -> [3 (+ 2 top), rows].

    `forward` replaces `decoder.decode` (a compiled version of it, say); `top` > 0 also
    stacks each row's `top` most likely tokens and their logprobs.
    """
    tokens, lengths, params = buffers.inputs(rows, sampled=sampled, filtered=filtered)
    logits = (forward or decoder.decode)(tokens, lengths, cache, span)
    alternatives = top_alternatives(logits, params, top) if top else None
    return stacked(*select_with_entropy(logits, params), alternatives)
