"""`shadowrl serve`: the policy behind an OpenAI-compatible endpoint, in production shape.

The model is opened by the one policy opener and wrapped in the batching engine, so
what users talk to is exactly what training and evaluation drive.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError
from shadowrl.serve.config import ServeConfig

if TYPE_CHECKING:
    from shadowrl.serve.store import TraceStore


def add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="override serve.host")
    parser.add_argument("--port", type=int, help="override serve.port")
    parser.add_argument("--model-name", help="override serve.model_name")


def serve_config(args: argparse.Namespace, config: Config) -> ServeConfig:
    """The `serve` section with CLI flags on top, validated like the section itself."""
    flags = {"host": args.host, "port": args.port, "model_name": args.model_name}
    merged = {**config.serve.model_dump(), **{k: v for k, v in flags.items() if v is not None}}
    return ServeConfig.model_validate(merged)


def run(args: argparse.Namespace, config: Config) -> int:
    cfg = serve_config(args, config)
    store = None if cfg.traces is None else open_trace_store(cfg.traces, cfg, config)
    try:
        serve(cfg, config, store)
    finally:
        if store is not None:
            store.close()  # commits what was acknowledged, then stops the writer
    return 0


def open_trace_store(traces: str, cfg: ServeConfig, config: Config) -> TraceStore:
    """`serve.traces` opened (and migrated) before the model loads: a bad URL fails fast."""
    from sqlalchemy.exc import SQLAlchemyError

    from shadowrl.serve.store import StoreError, open_store

    try:
        return open_store(traces, config.run_dir, cfg.traces_max_batch)
    except (StoreError, OSError, SQLAlchemyError) as e:
        raise UsageError(f"cannot open the trace store {traces!r}: {e}") from e


def serve(cfg: ServeConfig, config: Config, store: TraceStore | None) -> None:
    import uvicorn

    from shadowrl.commands.policies import open_engine
    from shadowrl.serve.server import create_app

    with open_engine(config.model.path, config) as (engine, tokenizer):
        positions = min(int(engine.model.config.max_position_embeddings), config.engine.max_seq_len)
        context = min(cfg.max_context_tokens or positions, positions)
        name = cfg.model_name or config.model.path  # what `eval`'s remote opener asks for
        app = create_app(
            engine,
            tokenizer,
            name,
            max_context_tokens=context,
            max_n=cfg.max_n,
            max_tokens_cap=cfg.max_tokens_cap,
            admin_token=cfg.admin_token,
            version=cfg.policy_version,
            traces=None if store is None else store.writer,
            checkpoint=config.model.path,
            feedback_window=cfg.feedback_window,
        )
        try:
            uvicorn.run(app, host=cfg.host, port=cfg.port, log_level=cfg.log_level)
        except OSError as e:  # port in use, no permission, unknown host
            raise UsageError(f"cannot listen on {cfg.host}:{cfg.port}: {e.strerror or e}") from e
