"""Which weights `shadowrl replay` runs a record through: the ones that generated it.

    --model M                 M, for every token (any policy spec `open_policy` takes)
    a training rollout        each token's own policy version, fetched bit-exactly from
                              the run's weight store into the base model
    a served session          its serving checkpoint if it is still on disk, else the
                              served model's name when that is loadable here
    any other record          the model it names (`shadowrl run --save`, `eval --save-dir`)

Every miss is a one-line `UsageError` naming what is gone and that `--model` replaces it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError
from shadowrl.commands.policies import open_policy, policy_kind
from shadowrl.episode import PolicyFactory, SharedPolicy


class RecordedWeights:
    """Local weights by policy version (`weights(v)`), and the continuation's policy."""

    def __init__(self, meta: dict[str, Any], override: str | None, config: Config):
        self.config, self.store = config, None
        self.spec = override or self._recorded_spec(meta)
        self._cache: tuple[int | None, Any] | None = None
        if override is None and meta.get("weights"):
            from shadowrl.rl.lora_sync import AdapterSync
            from shadowrl.rl.weights import WeightStore

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
        import torch

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
            from shadowrl.inference.weights import apply_state

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
        from shadowrl.inference.build import build_engine
        from shadowrl.models import checkpoint_dir

        tok, model = self.tokenizer(), self(version)
        cfg = self.config
        # heads beside the checkpoint belong to its weights, not to a store version's
        where = checkpoint_dir(self.spec) if self.store is None else None
        engine = build_engine(model, tok, cfg.engine, checkpoint=where, version=version,
                              seed=cfg.seed)  # fmt: skip
        with engine:
            yield SharedPolicy(engine, tok, f"model:{self.label(version)}")
