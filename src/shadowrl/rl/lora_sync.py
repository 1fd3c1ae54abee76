"""Adapter-only weight sync for `train.lora`: a version travels as its adapters.

Under LoRA the base weights never change during a run, so publishing the merged
weights W + (α/r)·B A each step would send [out, in] per targeted layer where the
adapters are r·(in + out). `AdapterSync` stands where the `WeightStore` stands (the
orchestrator's `WeightPublisher`, the engines' reader) and splits a version in two:

    base version b   the frozen base under the base names, with the adapters of b;
                     written by a publisher's first `publish` (a run's start, a resume,
                     a restarted trainer actor), so it is a full snapshot
    version v > b    the adapters (`<layer>.lora_a` [r, in], `<layer>.lora_b` [out, r])
                     and any companion tensors, delta-coded against v - 1 by the store

Every manifest keeps `{"lora": {"scale": α/r, "base_version": b}}` (`WeightStore.meta`).
A reader holds the base of the `b` it last saw and returns, for the engine, each target
weight merged from that base, base + (α/r)·B A computed in float32 and cast to the
stored dtype; the engine copies it into its own Linear weights (`apply_state`, in its
dtype), so decode runs plain merged Linears. It never adds an adapter onto weights
that already hold an older one. When `b` changes (a resumed trainer published a new
base), or on a reader's first fetch, the whole base comes with it: a fresh engine gets
base + current adapters. A version written without LoRA meta is returned as stored, so
any reader can open any run's store through this class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from torch import Tensor

from shadowrl.rl.lora import delta, is_adapter
from shadowrl.rl.weights import WeightStore


class Writer(Protocol):
    def publish(
        self, state: Mapping[str, Tensor], version: int, meta: Mapping[str, Any] | None = None
    ) -> dict[str, Any]: ...


class AdapterSync:
    """Publish (trainer side) and fetch (engine side) LoRA versions over a `WeightStore`."""

    def __init__(
        self,
        store: WeightStore,
        scale: float = 0.0,
        aside: frozenset[str] = frozenset(),
        writer: Writer | None = None,
    ) -> None:
        """`scale`: α/r of the adapters published here (a reader reads it from the
        manifest). `aside`: tensors that change every step besides the adapters (a
        companion's), published with them. `writer`: what writes a version into `store`
        (default: `store` itself; under FSDP a `ShardedPublisher`, each rank its rows)."""
        self.store, self.scale, self.aside = store, scale, aside
        self.writer: Writer = writer if writer is not None else store
        self._published: int | None = None  # the base version this publisher wrote
        self._base: tuple[int, dict[str, Tensor]] | None = None  # reader: (b, base tensors)

    # -- trainer side ----------------------------------------------------------------
    def publish(self, state: Mapping[str, Tensor], version: int) -> dict[str, Any]:
        """`state`: the trainer's (frozen base under base names + `lora_*` + companion)."""
        if self._published is None or version <= self._published:
            self._published = version  # this process's base: written whole, once
        else:
            state = {k: v for k, v in state.items() if is_adapter(k) or k in self.aside}
        meta = {"lora": {"scale": self.scale, "base_version": self._published}}
        return self.writer.publish(state, version, meta)

    # -- engine side -------------------------------------------------------------------
    def fetch(self, version: int, base: Mapping[str, Any] | None = None) -> dict[str, Tensor]:
        """What the engine loads for `version`: merged target weights (+ the whole base
        when it is new to this reader, + companion tensors)."""
        lora = self.store.meta(version).get("lora")
        if lora is None:  # a plain version: the store's bytes as they are
            return self.store.fetch(version, base)
        b, scale = int(lora["base_version"]), float(lora["scale"])
        out: dict[str, Tensor] = {}
        if self._base is None or self._base[0] != b:
            held = self.store.fetch(b)
            self._base = (b, {k: v for k, v in held.items() if not is_adapter(k)})
            out.update(self._base[1])
        state = self.store.fetch(version)  # the store's cache answers when version == b
        out.update({k: v for k, v in state.items() if not is_adapter(k)})  # a companion's
        weights = self._base[1]
        for name in (k.removesuffix(".lora_a") for k in state if k.endswith(".lora_a")):
            w = weights[f"{name}.weight"]
            a, b_ = state[f"{name}.lora_a"].float(), state[f"{name}.lora_b"].float()
            out[f"{name}.weight"] = (w.float() + delta(a, b_, scale)).to(w.dtype)
        return out

    def whole(self, version: int) -> dict[str, Tensor]:
        """The full merged state of `version` (the base with the targets merged), also
        after this reader holds the base: what a fresh model copy loads."""
        out = self.fetch(version)
        return {**self._base[1], **out} if self._base is not None else out

    def versions(self) -> list[int]:
        return self.store.versions()

    def latest_version(self) -> int | None:
        return self.store.latest_version()
