"""The in-process generation engine: continuous batching, KV cache, in-flight weight swaps.

One background thread owns the model and runs this loop until stopped:

    apply queued weight swaps  ->  admit waiting requests (one batched prefill, shared
        per prompt)  ->  one decode step for every running request (on CUDA, one CUDA
        graph replay: `cuda_graphs.py`)  ->  retire finished ones

Requests join and leave between decode steps, so a short completion never waits for a
long one and a new rollout never waits for a batch to drain. Every token records its
logprob and entropy (of the distribution it was drawn from) and the weights version that
made it; a swap lands between two steps, so versions change exactly where it happened and
no request is dropped or restarted. Identical prompts (a GRPO group) are prefilled once and
their KV is copied; a finished request's KV is parked in a prefix cache (`prefix.py`), so
an agent's next turn prefills only its new tokens, and a new prompt borrows a long head (the
system prompt) from a running prompt or one admitted with it instead of prefilling it
again. A paged KV pool that the batch outgrows preempts its newest request and recomputes
its KV later (`preemption.py`). With `speculative.k`, drafts are verified k per row in one
forward, exactly (`speculation.py`); `engine.weights` may run Linears in int8/FP8
(`precision.py`). A mixture of experts also records each position's experts
(`route_log.py`), for replay.

Callers: `await engine.generate(ids, sampling)` (the `Policy` protocol, safe from many
asyncio tasks), `engine.generate_stream(...)`, or the blocking `engine.generate_batch`
(`calls.py`)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any

import torch
from torch import Tensor

from shadowrl.inference.admission import borrowed_heads, shared_prompt, take_groups
from shadowrl.inference.caches import build_kv
from shadowrl.inference.calls import Calls, Spec
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.cuda_graphs import GraphStep
from shadowrl.inference.forward import Decoder
from shadowrl.inference.paged import PoolExhausted
from shadowrl.inference.precision import build_precision, warn_emulated_bf16
from shadowrl.inference.preemption import build_preemption, recompute
from shadowrl.inference.prefix import PrefixCache
from shadowrl.inference.requests import Done, OnDelta, Request
from shadowrl.inference.route_log import route_log
from shadowrl.inference.speculation import build_speculator
from shadowrl.inference.step import DecodeStep, EagerStep, Picks
from shadowrl.inference.weights import Swap, apply_state, eos_ids
from shadowrl.types import FinishReason, SamplingParams

STEPS: dict[str, type[EagerStep]] = {"eager": EagerStep, "cuda_graphs": GraphStep}


class Engine(Calls):
    """Batched generation over one Llama/Qwen-family Hugging Face model."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        config: EngineConfig | None = None,
        *,
        version: int = 0,
        seed: int | None = None,
        heads: Any = None,
    ) -> None:
        """`heads`: the draft heads that `speculative.k` drafts with (`speculation.py`)."""
        self.config = config or EngineConfig()
        if self.config.dtype != "auto":  # the engine owns its model: cast in place, once
            model = model.to(getattr(torch, self.config.dtype))
        if self.config.dtype == "bfloat16":
            warn_emulated_bf16(next(model.parameters()).device, "engine.dtype bfloat16")
        self.model = model.eval()
        self.precision = build_precision(model, self.config.weights, self.config.cpu_products)
        self.tokenizer = tokenizer  # only needed for stop strings
        self.decoder = Decoder(model, self.config.cpu_attention, self.config.cpu_decode)
        self.routes = route_log(model)
        plain = self.routes.active  # MoE: no graphs, no speculation (route_log.py says why)
        self.version = version
        param = next(model.parameters())
        self.device = param.device
        graphs = self.device.type == "cuda" and self.config.cuda_graphs and not plain
        self.cache = build_kv(self.decoder.shape, self.config, param, graphs=graphs)
        self.stepper: DecodeStep = STEPS["cuda_graphs" if graphs else "eager"](
            self.decoder, self.cache, self.config
        )
        self.prefix = PrefixCache(self.cache, self.config.prefix_cache_tokens)
        self.preemption = build_preemption(self.cache, self.prefix, self.decoder, self.routes)
        self.default_stop_ids = eos_ids(model, tokenizer)
        self._tensors = dict(model.state_dict(keep_vars=True))
        self.speculator = (
            None
            if plain
            else build_speculator(self.decoder, heads, self.cache, self.config, self._tensors)
        )
        self._rng = torch.Generator()  # seeds the requests that bring none
        self._rng.manual_seed(seed if seed is not None else self._rng.seed())
        self._cv = threading.Condition()
        self._inbox: list[Request] = []
        self._swaps: list[Swap] = []
        self._pending: list[Request] = []
        self._running: list[Request] = []  # running[i] lives in KV slot i
        self._thread: threading.Thread | None = None
        self._stopping = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Engine:
        """Start the decode thread (the first start also captures CUDA graphs)."""
        if self._thread is None:
            with torch.inference_mode():
                self.stepper.warmup()
            self._stopping = False
            self._thread = threading.Thread(target=self._loop, name="shadowrl-engine", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the loop; running and waiting requests finish with reason 'abort'."""
        if self._thread is None:
            return
        with self._cv:
            self._stopping = True
            self._cv.notify()
        self._thread.join()
        self._thread = None

    def __enter__(self) -> Engine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -------------------------------------------------------------------- callers

    def submit(
        self, prompt_ids: Sequence[int], sampling: SamplingParams, on_done: Done,
        on_delta: OnDelta | None = None,
    ) -> Request:  # fmt: skip
        """Queue one request (thread-safe); callbacks run on the engine thread."""
        return self.submit_all([(prompt_ids, sampling, on_done, on_delta)])[0]

    def abort(self, request: Request) -> None:
        """Finish a request early with reason 'abort' (no-op once it has finished)."""
        request.aborted = True
        with self._cv:
            self._cv.notify()

    def update_weights(
        self, state: Mapping[str, Tensor], version: int, *, delta: bool = False
    ) -> float:
        """Load new weights (or add `delta` to the current ones) between two decode steps.

        Blocks until applied; returns the decode pause in seconds. Keys may be a subset
        of the model's (a shard); unknown keys raise before anything changes.
        """
        swap = Swap(state, version, delta)
        if self._thread is None:
            with torch.inference_mode():
                self._apply_swap(swap)
        else:
            with self._cv:
                self._swaps.append(swap)
                self._cv.notify()
            swap.done.wait()
        if swap.error is not None:
            raise swap.error
        return swap.pause_s

    @property
    def started(self) -> bool:
        return self._thread is not None

    def submit_all(self, specs: Sequence[Spec]) -> list[Request]:
        """Queue requests that are admitted together where slots allow (thread-safe)."""
        requests = [self._make_request(*spec) for spec in specs]
        with self._cv:  # one lock: a group submitted together is admitted together
            if self._thread is None:
                raise RuntimeError("engine is not running; call start() or use `with engine:`")
            self._inbox.extend(requests)
            self._cv.notify()
        return requests

    def _make_request(
        self,
        prompt: Sequence[int],
        sampling: SamplingParams,
        on_done: Done,
        on_delta: OnDelta | None,
    ) -> Request:
        if not prompt or len(prompt) >= self.config.max_seq_len:
            raise ValueError(f"prompt length {len(prompt)} not in [1, {self.config.max_seq_len})")
        if sampling.stop and self.tokenizer is None:
            raise ValueError("stop strings need an engine built with a tokenizer")
        seed = sampling.seed
        if seed is None:
            with self._cv:
                seed = int(torch.randint(2**62, (1,), generator=self._rng))
        stop_ids = frozenset(sampling.stop_token_ids) | self.default_stop_ids
        return Request(tuple(prompt), sampling, stop_ids, seed % 2**62, on_done, on_delta)

    # --------------------------------------------------------------- engine thread

    def _loop(self) -> None:
        with torch.inference_mode():
            while True:
                with self._cv:
                    while not (self._stopping or self._inbox or self._swaps or self._busy()):
                        self._cv.wait()
                    if self._stopping:
                        break
                    self._pending += self._inbox
                    swaps, self._inbox, self._swaps = self._swaps, [], []
                for swap in swaps:
                    self._apply_swap(swap)
                try:
                    self._step()
                except Exception as error:  # fail loudly to every caller, keep serving
                    for request in self._drain():
                        request.fail(error)
        for request in self._drain() + self._inbox:
            request.finish("abort")
        self._inbox = []

    def _busy(self) -> bool:
        return bool(self._running or self._pending or self.preemption.waiting)

    def _drain(self) -> list[Request]:
        """Every request the loop holds, removed (their KV freed)."""
        for slot in range(len(self._running)):
            self.cache.free(slot)
        held = self._running + self.preemption.waiting + self._pending
        self._running, self.preemption.waiting, self._pending = [], [], []
        return held

    def _step(self) -> None:
        for queue in (self._pending, self.preemption.waiting):
            for request in [r for r in queue if r.aborted]:
                queue.remove(request)
                request.finish("abort")
        self._retire([(i, "abort") for i, r in enumerate(self._running) if r.aborted])
        self._admit()
        if self._running:
            self._decode()

    def _admit(self) -> None:
        """Prefill waiting requests into free slots: each new prompt once, all in one forward.

        Identical prompts (a GRPO group) take adjacent slots and share one prefill, or the
        KV of a running request with that prompt under the current weights. Preempted
        requests return first; new ones only while the KV pool has room for them.
        """
        self.preemption.readmit(self._running, self.config.max_batch)
        if self.preemption.waiting:
            return
        first = len(self._running)
        free, budget = self.config.max_batch - first, self.config.prefill_tokens_per_step
        groups = take_groups(self._pending, self._running, free, self.version, self.prefix, budget)
        fits = self.preemption.fitting(groups, self._running)
        self._pending[:0] = [r for g in groups[fits:] for r in g]
        if not (groups := groups[:fits]):
            return
        starts = list(accumulate((len(g) for g in groups), initial=first))[:-1]
        sources = [shared_prompt(self._running, g[0].prompt, self.version) for g in groups]
        self._running += [r for g in groups for r in g]
        fresh = [i for i, source in enumerate(sources) if source < 0]
        if fresh and not self._prefill_fresh(groups, starts, fresh, first):
            return
        for i in fresh:
            sources[i] = starts[i]
        rows: list[Tensor] = []
        for group, start, source in zip(groups, starts, sources, strict=True):
            lead, length = group[0], len(group[0].prompt)
            if source != start:
                self.cache.move(source, start, length)
                lead.prompt_logits = self._running[source].prompt_logits
            self.cache.broadcast(start, list(range(start + 1, start + len(group))), length)
            self.routes.shared(self._running[source], group, length)
            assert lead.prompt_logits is not None
            for request in group:  # each holds the prompt's KV: shareable, and parked when done
                request.prompt_logits, request.prompt_version = lead.prompt_logits, self.version
            rows += [lead.prompt_logits] * len(group)
        admitted = self._running[first:]
        self._append(admitted, self.stepper.sample(admitted, torch.stack(rows)))
        self._retire_done(range(first, len(self._running)))

    def _prefill_fresh(
        self, groups: list[list[Request]], starts: list[int], fresh: list[int], first: int
    ) -> bool:
        """Prefill the new prompts (`groups[i]` for i in `fresh`) into their slots.

        One that shares a long head with a running prompt or another new one borrows it:
        the lender's prompt is parked (a new one's after its prefill) and the borrower
        restores it (`admission.borrowed_heads`). False when the pool cannot hold them:
        the requests admitted from slot `first` on have failed.
        """
        new, least = [(starts[i], groups[i][0]) for i in fresh], self.config.shared_head_tokens
        borrow = borrowed_heads(self._running[:first], self.version, new, self.prefix, least)
        try:
            self._prefill(groups, starts, [i for k, i in enumerate(fresh) if k not in borrow])
            for slot, lender in dict(borrow.values()).items():  # each lender once, by its slot
                routes, n = self.routes.of(lender), len(lender.prompt)
                self.prefix.park(slot, lender.prompt, None if routes is None else routes[:n])
            if borrow:
                self._prefill(groups, starts, [fresh[k] for k in sorted(borrow)])
        except PoolExhausted as error:  # a prompt longer than the whole pool holds
            self._refuse(first, error)
            return False
        return True

    def _prefill(self, groups: list[list[Request]], starts: list[int], which: list[int]) -> None:
        """Prefill `groups[i]`'s prompt into slot `starts[i]` for i in `which`, each after its
        longest cached prefix; sets each lead's `prompt_logits`."""
        if not which:  # every new prompt borrowed a head from a running one
            return
        heads, slots = [groups[i][0] for i in which], [starts[i] for i in which]
        hits = [self.prefix.restore_longest(h.prompt, s) for h, s in zip(heads, slots, strict=True)]
        cached = [hit.length for hit in hits]
        prompts = [h.prompt[n:] for h, n in zip(heads, cached, strict=True)]
        logits = self.decoder.prefill(prompts, slots, self.cache, cached if any(cached) else None)
        self.routes.prefilled(heads, [hit.routes for hit in hits], [len(p) for p in prompts])
        for row, head in enumerate(heads):
            head.prompt_logits = logits[row]

    def _refuse(self, first: int, error: Exception) -> None:
        """Fail the requests admitted from slot `first` on, freeing their slots."""
        for slot, request in enumerate(self._running[first:], first):
            self.cache.free(slot)
            request.fail(error)
        del self._running[first:]

    def _decode(self) -> None:
        try:
            self._decode_step()
        except PoolExhausted as error:  # raised before any write: free blocks, retry next turn
            if not self.preemption.make_room(self._running):
                self._running[0].error = error  # it alone outgrew the pool
                self._retire([(0, "abort")])

    def _decode_step(self) -> None:
        running = self._running
        span = max(r.cached for r in running) + 1
        spec = self.speculator
        if spec is not None and spec.pays(running, span):  # verify k drafts per row
            spec.decode(running, span, self.version, self.tokenizer)
        else:  # timed: what plain decoding costs, for `speculative.auto`
            with spec.timing_plain(len(running)) if spec else contextlib.nullcontext():
                picks = self.stepper.decode(running, span)  # it prepares the cache
                self.routes.decoded(running)
                self._append(running, picks)
        self._retire_done(range(len(running)))

    def _append(self, requests: Sequence[Request], picks: Picks) -> None:
        for row, request in enumerate(requests):
            top = picks.top_of(row, request.sampling.top_logprobs)
            pick = picks.ids[row], picks.logprobs[row], self.version, top, picks.entropies[row]
            request.append(*pick)
            request.draft, request.draft_logq = (), None  # drafts were for the old counters

    def _retire_done(self, slots: range) -> None:
        limit, tokenizer = self.config.max_seq_len, self.tokenizer
        finished = [(slot, self._running[slot].finish_reason(limit, tokenizer)) for slot in slots]
        self._retire([(slot, reason) for slot, reason in finished if reason is not None])

    def _retire(self, finished: list[tuple[int, FinishReason]]) -> None:
        """Remove finished requests, moving the last slot into each hole to stay packed."""
        for slot, reason in sorted(finished, reverse=True):
            request = self._running[slot]
            if reason != "abort" and request.prompt_version == self.version:
                tokens = (request.prompt + tuple(request.tokens))[: request.cached]
                self.prefix.park(slot, tokens, self.routes.of(request))
            last = len(self._running) - 1
            self.cache.free(slot)
            if slot != last:
                mover = self._running[last]
                self.cache.move(last, slot, mover.cached + 1)
                self.cache.free(last)
                self._running[slot] = mover
            self._running.pop()
            request.finish(reason)

    def _apply_swap(self, swap: Swap) -> None:
        start = time.perf_counter()
        try:
            self.precision.refresh(apply_state(self._tensors, swap.state, delta=swap.delta))
            self.version = swap.version
            self.prefix.clear()
            if self.config.recompute_kv_on_swap and self._running:
                recompute(self.decoder, self.cache, self._running, 0)
                self.routes.discard()  # tokens keep the routes they were sampled under
        except Exception as error:
            swap.error = error
        swap.pause_s = time.perf_counter() - start
        swap.done.set()
