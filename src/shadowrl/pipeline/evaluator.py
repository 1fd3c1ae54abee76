"""The evaluator service on Ray: `eval/runner.py`'s `evaluate`, run in an actor whose
samples run on its own pool of environment workers and the engine actors.

    driver (`shadowrl eval|realtime`)        Ray cluster
    ──────────────────────────────           ──────────────────────────────────────────
    ray_evaluator(policy) ── evaluate ──►    EvaluatorActor: evaluate(..., WorkerEpisodes)
                          ◄── EvalResult ──     │ prepare, score, pins (the one runner)
                                                └► EnvWorker × (fixed | elastic): graded
                                                     sample in a fork ──► EngineActor × N

It lives here, above `rl` and `eval`, because it joins the two: the runner is eval's,
the actors and the worker pool are `rl/cluster`'s. Nothing in it re-implements an
episode, the scoring or the loop: the same `evaluate` runs with `episodes=` set to
the pool. A policy is local weights (served by `ray.engines` engine actors built from
them, fixed weights, no store) or a scripted reference (run on the workers).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from shadowrl.episode import EpisodeSpec, PolicyFactory, ReferencePolicy, SharedPolicy
from shadowrl.eval import ConfigPins, EvalResult, evaluate
from shadowrl.eval.config import EvalConfig
from shadowrl.inference.config import EngineConfig
from shadowrl.rl.cluster.actors import EngineClient, placement
from shadowrl.rl.cluster.backend import actor_class, connect, start_engines, start_env_pool
from shadowrl.rl.cluster.config import RayConfig
from shadowrl.rl.cluster.episodes import WorkerEpisodes
from shadowrl.tasks import Task

log = logging.getLogger(__name__)
_opened = itertools.count()


class EvaluatorActor:
    """Runs evaluations of one policy; owns the environment workers its samples run on."""

    def __init__(
        self,
        engines: list[Any],
        tokenizer: Any,
        spec: EpisodeSpec,
        cfg: RayConfig,
        prefix: str,
        reference: str | None,
        description: str,
    ) -> None:
        import ray

        self.spec, self.reference, self.retries = spec, reference, cfg.episode_retries
        self.pool = start_env_pool(prefix, cfg, engines, ray.put(tokenizer), spec)
        self.pool.wait_ready()
        self.factory: PolicyFactory = (
            ReferencePolicy(reference, tokenizer)
            if reference is not None
            else SharedPolicy(EngineClient(engines, 0), tokenizer, description)
        )  # pins the tokenizer and the description; the samples run on the workers

    async def evaluate(
        self, tasks: Sequence[Task], settings: EvalConfig, cache_dir: str, pins: ConfigPins,
        seed: int, suite: str,
    ) -> EvalResult:  # fmt: skip
        return await evaluate(
            tasks, self.factory, self.spec, settings=settings, cache_dir=cache_dir,
            config_pins=pins, seed=seed, suite=suite, progress=False,
            episodes=WorkerEpisodes(self.pool, self.reference, self.retries),
        )  # fmt: skip

    def metrics(self) -> dict[str, int]:
        return self.pool.metrics()

    def close(self) -> None:
        self.pool.close()

    def where(self) -> dict[str, Any]:
        return {**placement(), "env_workers": self.pool.size}


class RemoteEvaluator:
    """The driver's handle: `await evaluate(tasks, settings=..., ...)`, as in one process."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self.last_metrics: dict[str, int] = {}

    async def __call__(
        self, tasks: Sequence[Task], *, settings: EvalConfig, cache_dir: str,
        config_pins: ConfigPins, seed: int = 0, suite: str = "", progress: bool = True,
    ) -> EvalResult:  # fmt: skip
        n = len(tasks) * settings.samples
        if progress:
            log.info("evaluating %d samples on the Ray evaluator (%s)", n, suite)
        result: EvalResult = await self.actor.evaluate.remote(
            list(tasks), settings, str(cache_dir), config_pins, seed, suite
        )
        self.last_metrics = await self.actor.metrics.remote()
        return result


@contextlib.asynccontextmanager
async def ray_evaluator(
    cfg: RayConfig,
    *,
    model: Any,
    tokenizer: Any,
    reference: str | None,
    description: str,
    engine_config: EngineConfig,
    spec: EpisodeSpec,
    seed: int,
    name: str = "eval",
    heads: Any = None,
) -> AsyncIterator[RemoteEvaluator]:
    """Engine actors for `model` with draft `heads` (none for a `reference` policy), the
    evaluator actor and its workers, on the cluster at `cfg.address`; all killed on the
    way out."""
    import ray

    connect(cfg)
    # one name per evaluator: the actors of the previous one may still hold theirs
    prefix = f"shadowrl-{name}{next(_opened)}-j{ray.get_runtime_context().get_job_id()}"
    started: list[Any] = []
    try:
        tok_ref = ray.put(tokenizer)
        if reference is None:
            started += start_engines(
                prefix, cfg, ray.put(model), tok_ref, engine_config, seed, heads_ref=ray.put(heads)
            )
        evaluator = actor_class(
            EvaluatorActor, prefix, "evaluator", cfg.evaluator_cpus, 0.0, cfg.evaluator_resources,
            max_concurrency=1000,
        ).remote(list(started), tok_ref, spec, cfg, prefix, reference, description)  # fmt: skip
        started.append(evaluator)
        placed = await evaluator.where.remote()  # up, its first workers too
        log.info("ray evaluator on %s with %d env workers", placed["ip"], placed["env_workers"])
        yield RemoteEvaluator(evaluator)
        await evaluator.close.remote()
    finally:
        for actor in reversed(started):
            ray.kill(actor, no_restart=True)
