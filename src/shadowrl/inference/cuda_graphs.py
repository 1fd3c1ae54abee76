"""Decode steps replayed from CUDA graphs, so a step costs one launch, not a thousand.

Eager decoding of a small model is bound by the host: every layer issues a dozen
kernels, each a few microseconds of Python and driver work, while the GPU idles. A
CUDA graph records the whole step (forward over the KV cache + sampling) once and
replays it with a single launch. A graph fixes shapes and addresses, so:

- the batch is padded up to a bucket (1, 2, 4, ...); padding rows are greedy no-ops that
  write position 0 of free KV slots, which the next prefill overwrites;
- attention reads a fixed span (a context bucket), masking what lies past each row;
- inputs live in static buffers the graph reads; the KV cache is allocated at its full
  size up front (it never grows, so its storage never moves);
- weight swaps copy into the parameters in place, so the graphs keep reading the new
  weights with no recapture.

Graphs are captured at `warmup` for every (batch, span) bucket with plain sampling,
and lazily for top-k/top-p batches; a step recording top alternatives runs eagerly.
Capturing with real inputs is harmless: the warm-up and the capture write the same keys
and values the step itself writes. If capture fails the step falls back to eager with
one warning.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import torch
from torch import Tensor

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.forward import Decoder
from shadowrl.inference.kv import KVCache
from shadowrl.inference.step import EagerStep, Forward, decode_and_sample

log = logging.getLogger(__name__)

Key = tuple[int, int, bool]  # (padded batch, attention span, top-k/top-p filtering)


def buckets(sizes: Sequence[int], limit: int) -> list[int]:
    """The sizes below `limit`, then `limit` itself: every value up to it has a bucket."""
    return sorted({s for s in sizes if s < limit} | {limit})


class BucketedStep(EagerStep):
    """`EagerStep` under a graph's shape discipline: batch and span padded to buckets.

    Runs anywhere (it is what a graph replays, minus the graph), so the padding rows and
    the fixed span are tested on CPU too.
    """

    def __init__(self, decoder: Decoder, cache: KVCache, config: EngineConfig) -> None:
        super().__init__(decoder, cache, config)
        if cache.capacity != cache.max_capacity:
            raise ValueError("fixed spans need the KV cache allocated at max_seq_len")
        self.batch_sizes = buckets(config.cuda_graph_batch_sizes, config.max_batch)
        self.spans = buckets(config.cuda_graph_spans, cache.capacity)

    def _rows(self, n: int) -> int:
        return next(b for b in self.batch_sizes if b >= n)

    def _span(self, span: int) -> int:
        return next(s for s in self.spans if s >= span)


class GraphStep(BucketedStep):
    """`BucketedStep` that replays a CUDA graph per (batch, span, filtering) bucket."""

    def __init__(self, decoder: Decoder, cache: KVCache, config: EngineConfig) -> None:
        super().__init__(decoder, cache, config)
        self.graphs: dict[Key, tuple[torch.cuda.CUDAGraph, Tensor]] = {}
        self.pool = torch.cuda.graph_pool_handle()  # one memory pool shared by all graphs
        self.enabled = True
        # Inductor fuses eager PyTorch's ~50 kernels per layer into a few; the graph then
        # replays the fused kernels. Only the forward: compiling the sampler too failed on
        # torch 2.11 (Inductor has no split reduction for argmax over a 152k vocabulary
        # with a dynamic batch). dynamic=True: one compile serves the bucket shapes.
        self.forward: Forward | None = (
            torch.compile(decoder.decode, dynamic=True) if config.compile_decode else None
        )

    def warmup(self) -> None:
        """Capture every (batch, span) bucket without filtering, largest first."""
        start = time.perf_counter()
        for rows in reversed(self.batch_sizes):
            for span in reversed(self.spans):
                if not self.enabled or (rows, span, False) in self.graphs:
                    continue
                self._load([], rows)  # padding only: every slot is free before serving
                self._capture((rows, span, False))
        torch.cuda.synchronize()
        log.info("captured %d CUDA graphs in %.1fs", len(self.graphs), time.perf_counter() - start)

    def _run(self, rows: int, span: int, sampled: bool, filtered: bool, top: int = 0) -> Tensor:
        key = (rows, span, filtered)
        entry = None if top else self.graphs.get(key) or self._capture(key)
        if entry is None:  # steps that record top alternatives are rare: they run eagerly
            return super()._run(rows, span, sampled, filtered, top)
        graph, out = entry
        graph.replay()
        return out

    def _capture(self, key: Key) -> tuple[torch.cuda.CUDAGraph, Tensor] | None:
        """Record one step for `key` on the inputs now in the buffers (None: fall back)."""
        if not self.enabled:
            return None
        rows, span, filtered = key
        args = (self.decoder, self.cache, self.buffers, rows, span, True, filtered)
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up run (and compile): lazy inits stay out
                decode_and_sample(*args, forward=self.forward)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            # thread_local: callers may use CUDA on other threads while the engine captures.
            with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
                out = decode_and_sample(*args, forward=self.forward)
        except Exception as error:
            log.warning("CUDA graph capture failed for %s, decoding eagerly: %r", key, error)
            self.enabled = False
            return None
        self.graphs[key] = (graph, out)
        return graph, out
