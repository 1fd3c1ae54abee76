"""Which weights `shadowrl replay` runs a record through, and the recorded tokens
teacher-forced through them against the logprobs recorded with them.

Which weights: the ones that generated the record.

    --model M                 M, for every token (any policy spec `open_policy` takes)
    a training rollout        each token's own policy version, fetched bit-exactly from
                              the run's weight store into the base model
    a served session          its serving checkpoint if it is still on disk, else the
                              served model's name when that is loadable here
    any other record          the model it names (`shadowrl run --save`, `eval --save-dir`)

Every miss is a one-line `UsageError` naming what is gone and that `--model` replaces it.

The check: a recorded logprob is the log-probability of the token under the distribution
it was drawn from (`inference/sampling.py`: logits over the temperature, then the top-p
nucleus; the plain softmax when greedy). `tail_gap` recomputes exactly that, with one
forward per segment and policy version, and reports the largest difference: the
weights that generated the record give float32 rounding (~1e-6 on CPU), any other
checkpoint a gap orders of magnitude larger. This is how `shadowrl replay` checks that
it holds the recorded policy, and what it prints when it does not.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError
from shadowrl.commands.policies import open_policy, policy_kind
from shadowrl.episode import PolicyFactory, SharedPolicy
from shadowrl.inference import filter_top_k_top_p
from shadowrl.rl import decoder_hidden
from shadowrl.types import Segment


class RecordedWeights:
    """Local weights by policy version (`weights(v)`), and the continuation's policy."""

    def __init__(self, meta: dict[str, Any], override: str | None, config: Config):
        self.config, self.store = config, None
        self.spec = override or self._recorded_spec(meta)
        self._cache: tuple[int | None, Any] | None = None
        if override is None and meta.get("weights"):
            from shadowrl.rl import AdapterSync, WeightStore

            url = str(meta["weights"])
            if "://" not in url and not Path(url).is_dir():
                raise UsageError(f"the record's weight store {url} no longer exists: pass --model")
            # a LoRA run's versions hold adapters: the reader merges them onto its base
            self.store, self.url = AdapterSync(WeightStore(url)), url

    @staticmethod
    def _recorded_spec(meta: dict[str, Any]) -> str:
        ckpt = meta.get("checkpoint")
        if ckpt and Path(ckpt).exists():
            return str(ckpt)
        model = str(meta.get("model") or "")
        try:
            policy_kind(model)
        except UsageError:
            gone = f"checkpoint {ckpt}" if ckpt else f"model {model!r}"
            raise UsageError(
                f"the recorded policy ({gone}) is not on this machine: pass --model"
            ) from None
        return model

    def label(self, version: int) -> str:
        """The policy as printed: a weight-store version shows as `<base>@v<version>`."""
        return f"{self.spec}@v{version}" if self.store is not None else self.spec

    @property
    def local(self) -> bool:
        return self.store is not None or policy_kind(self.spec) == "local"

    def tokenizer(self) -> Any:
        from shadowrl.models import load_tokenizer

        return load_tokenizer(self.spec if self.local else self.config.model.path)

    def __call__(self, version: int) -> Any:
        """The policy that sampled tokens of `version` (one model held at a time)."""
        key = version if self.store is not None else None
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        from shadowrl.models import load_model

        cfg = self.config
        where = cfg.model.model_copy(update={"path": self.spec})
        model, _ = load_model(where, cfg.engine.weights_dtype, cfg.seed)
        if self.store is not None:
            held = self.store.versions()
            if version not in held:
                span = f"{held[0]}..{held[-1]}" if held else "none"
                raise UsageError(
                    f"policy version {version} is no longer in the weight store at {self.url} "
                    f"(it holds {span}): pass --model to replay with other weights"
                )
            from shadowrl.inference import apply_state

            with torch.no_grad():  # the engine's own loader: tied weights copied once
                apply_state(
                    model.state_dict(keep_vars=True), self.store.fetch(version), delta=False
                )
        self._cache = (key, model.eval())
        return self._cache[1]

    @contextlib.asynccontextmanager
    async def policy(self, version: int) -> AsyncIterator[PolicyFactory]:
        """The continuation's policy: local weights of `version` on the batched engine."""
        if not self.local:
            async with open_policy(self.spec, self.config) as factory:
                yield factory
            return
        from shadowrl.inference import build_engine
        from shadowrl.models import checkpoint_dir

        tok, model = self.tokenizer(), self(version)
        cfg = self.config
        # heads beside the checkpoint belong to its weights, not to a store version's
        where = checkpoint_dir(self.spec) if self.store is None else None
        engine = build_engine(model, tok, cfg.engine, checkpoint=where, version=version,
                              seed=cfg.seed)  # fmt: skip
        with engine:
            yield SharedPolicy(engine, tok, f"model:{self.label(version)}")


# ------------------------------------------------------------------ the teacher-forced check


@dataclass(frozen=True)
class Run:
    """One generation inside a segment: positions [start, end) and how it was sampled."""

    segment: Segment
    start: int
    end: int
    temperature: float = 1.0
    top_p: float = 1.0


@dataclass(frozen=True)
class Gap:
    """max |log π(recorded token) − recorded logprob| over `tokens` generated tokens."""

    max_abs: float
    tokens: int
    versions: tuple[int, ...]  # the policy versions the tokens were sampled from


def sampled_logprobs(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """Log-probabilities [N, V] of the distribution a row with these settings samples from."""
    if temperature <= 0:  # greedy rows report the plain softmax
        return logits.float().log_softmax(-1)
    scaled = logits.float() / max(temperature, 1e-6)
    if top_p < 1.0:
        n = scaled.shape[0]
        keep_all = torch.zeros(n, dtype=torch.long, device=scaled.device)
        scaled = filter_top_k_top_p(scaled, keep_all, torch.full((n,), top_p, device=scaled.device))
    return scaled.log_softmax(-1)


def _run_logprobs(
    model: Any, hidden: torch.Tensor, ids: torch.Tensor, run: Run, at: list[int], chunk: int
) -> torch.Tensor:
    """log π of tokens `at` (positions in run.segment) given the hidden states [T, D]."""
    head, out = model.get_output_embeddings(), []
    for i in range(0, len(at), chunk):
        pos = torch.tensor(at[i : i + chunk])
        logits = head(hidden[pos - 1])  # the state at t-1 predicts token t
        lp = sampled_logprobs(logits, run.temperature, run.top_p)
        out.append(lp.gather(1, ids[pos][:, None])[:, 0])
    return torch.cat(out) if out else torch.zeros(0)


def tail_gap(weights: Callable[[int], Any], runs: Sequence[Run], chunk: int = 256) -> Gap:
    """Teacher-force every run through `weights(version)` (the policy of that version)."""
    gap, count, seen = 0.0, 0, set[int]()
    by_segment: dict[int, list[Run]] = {}
    for r in runs:
        by_segment.setdefault(id(r.segment), []).append(r)
    for group in by_segment.values():
        seg = group[0].segment
        ids = torch.tensor(seg.token_ids)
        last = max(r.end for r in group) - 1
        versions = sorted({seg.versions[p] for r in group for p in range(r.start, r.end)})
        for v in versions:
            model = weights(v)
            with torch.no_grad():
                hidden = decoder_hidden(model, ids[None, :last])[0]
                for r in group:
                    at = [p for p in range(max(r.start, 1), r.end) if seg.versions[p] == v]
                    lp = _run_logprobs(model, hidden, ids, r, at, chunk)
                    recorded = torch.tensor([seg.logprobs[p] for p in at])
                    if at:
                        gap = max(gap, float((lp - recorded).abs().max()))
                    count += len(at)
            seen.add(v)
    return Gap(gap, count, tuple(sorted(seen)))
