"""The one policy opener: what `--policy` / `--model` / `model.path` can name.

    gold | noop | scripted      scripted reference policies, made fresh per episode
                                (scripted = the expert whose episodes SFT learns from)
    http(s)://host:port/v1      a served model, through its OpenAI-compatible endpoint
    smollm2 | tiny | tiny-moe | <HF dir> | <file.gguf>
                                weights loaded here and served by the batched engine

Every command that takes a policy name (`run --model`, `eval --policy`, `replay --model`,
`serve`'s `model.path`, the real-time loop's evals) opens it here; below `commands`,
`rl` and `eval` receive a `PolicyFactory` and never know which kind they got. (The
commands that train, `train`, `sft`, `mtp distill` and `realtime`, load the weights they
train with `models.load_model`; every engine is built by `inference/build.py`.) A model
is loaded once and shared by every episode, so the engine batches them together.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError
from shadowrl.episode import PolicyFactory, ReferencePolicy, SharedPolicy
from shadowrl.models import ModelPathError, check_model_path

if TYPE_CHECKING:
    from shadowrl.eval import EvalResult, Evaluate
    from shadowrl.tasks import Task

REFERENCE = ("gold", "noop", "scripted")
PolicyKind = Literal["reference", "remote", "local"]


def policy_kind(spec: str) -> PolicyKind:
    """Which kind of policy a spec names; a local path that loads nothing is a UsageError."""
    if spec in REFERENCE:
        return "reference"
    if spec.startswith(("http://", "https://")):
        return "remote"
    try:
        check_model_path(spec)
    except ModelPathError as e:
        raise UsageError(
            f"{e}; or a reference policy {list(REFERENCE)} or an http(s):// URL"
        ) from e
    return "local"


@contextlib.contextmanager
def open_engine(spec: str, config: Config, version: int = 0) -> Iterator[tuple[Any, Any]]:
    """(engine, tokenizer) for local weights `spec`, the engine's decode thread running,
    its tokens stamped policy `version` (a restarted server's is the registry's)."""
    if policy_kind(spec) != "local":
        raise UsageError(f"{spec!r} is not a model to load here (a local path or name)")
    with _engine(spec, config, version) as pair:
        yield pair


@contextlib.contextmanager
def _engine(spec: str, config: Config, version: int = 0) -> Iterator[tuple[Any, Any]]:
    """`open_engine` once `spec` is known to be local weights (checked by the caller)."""
    from shadowrl.inference import build_engine
    from shadowrl.models import load_model

    model, tokenizer = load_model(
        config.model.model_copy(update={"path": spec}), config.engine.weights_dtype, config.seed
    )
    heads = _heads(spec, config)
    with build_engine(
        model, tokenizer, config.engine, heads=heads, version=version, seed=config.seed
    ) as engine:
        yield engine, tokenizer


def _heads(spec: str, config: Config) -> Any:
    """The MTP heads for local weights `spec` (`inference/build.draft_heads`): the same
    for an engine here and on Ray; a missing `engine.speculative.heads` is a UsageError."""
    from shadowrl.inference import draft_heads
    from shadowrl.models import checkpoint_dir

    try:
        return draft_heads(config.engine, checkpoint_dir(spec))
    except FileNotFoundError as e:
        raise UsageError(str(e)) from e


@contextlib.asynccontextmanager
async def open_policy(spec: str, config: Config) -> AsyncIterator[PolicyFactory]:
    """`async with open_policy(spec, config) as factory:` runs whatever serves the policy.

    Reference and remote policies render with the tokenizer of `config.model.path`.
    """
    from shadowrl.models import load_tokenizer

    kind = policy_kind(spec)
    if kind == "local":
        with _engine(spec, config) as (engine, tokenizer):
            yield SharedPolicy(engine, tokenizer, f"model:{spec}")
        return
    tokenizer = load_tokenizer(config.model.path)
    if kind == "reference":
        yield ReferencePolicy(spec, tokenizer)
        return
    from shadowrl.serve import RemotePolicy

    policy = RemotePolicy(spec, config.model.path, tokenizer=tokenizer)
    try:
        yield SharedPolicy(policy, tokenizer, f"remote:{spec} ({config.model.path})")
    finally:
        await policy.aclose()


@contextlib.asynccontextmanager
async def open_evaluator(spec: str, config: Config) -> AsyncIterator[Evaluate]:
    """`async with open_evaluator(spec, config) as run:` evaluates policy `spec` on the
    command's episode spec: in this process, or with `backend: ray` on the evaluator
    actor (`pipeline/evaluator.py`), its samples on Ray environment workers."""
    from shadowrl.commands.config import episode_spec
    from shadowrl.eval import evaluate

    bound = episode_spec(config)
    if config.backend == "ray":
        async with _ray_evaluator(spec, config) as remote:
            yield remote
        return
    async with open_policy(spec, config) as factory:

        async def run(tasks: Sequence[Task], **kw: Any) -> EvalResult:
            return await evaluate(tasks, factory, bound, **kw)

        yield run


@contextlib.asynccontextmanager
async def _ray_evaluator(spec: str, config: Config) -> AsyncIterator[Evaluate]:
    from shadowrl.commands.config import episode_spec
    from shadowrl.models import load_model, load_tokenizer
    from shadowrl.pipeline import ray_evaluator

    kind = policy_kind(spec)
    if kind == "remote":
        raise UsageError("--backend=ray evaluates local weights or a reference policy, not a URL")
    try:
        import ray  # noqa: F401
    except ImportError as e:
        raise UsageError("--backend=ray needs Ray: pip install 'shadowrl[ray]'") from e
    heads = None
    if kind == "reference":
        model, tokenizer, what = None, load_tokenizer(config.model.path), f"reference:{spec}"
    else:
        model, tokenizer = load_model(
            config.model.model_copy(update={"path": spec}), config.engine.weights_dtype, config.seed
        )
        heads, what = _heads(spec, config), f"model:{spec}"
    async with ray_evaluator(
        config.ray, model=model, tokenizer=tokenizer,
        reference=spec if kind == "reference" else None, description=what,
        engine_config=config.engine, spec=episode_spec(config), seed=config.seed, heads=heads,
    ) as remote:  # fmt: skip
        yield remote
