"""`shadowrl serve`: the policy behind an OpenAI-compatible endpoint, in production shape.

The model is opened by the one policy opener and wrapped in the batching engine, so
what users talk to is exactly what training and evaluation drive. An open server (no
`serve.api_keys`) refuses to listen beyond loopback unless `--insecure` says so.
"""

from __future__ import annotations

import argparse
import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError
from shadowrl.serve.config import ServeConfig

if TYPE_CHECKING:
    from shadowrl.serve import AgentSettings, KeyRing
    from shadowrl.serve.store import TraceStore


def add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="override serve.host")
    parser.add_argument("--port", type=int, help="override serve.port")
    parser.add_argument("--model-name", help="override serve.model_name")
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback serve.host without serve.api_keys (anyone may call it)",
    )


def serve_config(args: argparse.Namespace, config: Config) -> ServeConfig:
    """The `serve` section with CLI flags on top, validated like the section itself."""
    flags = {"host": args.host, "port": args.port, "model_name": args.model_name}
    merged = {**config.serve.model_dump(), **{k: v for k, v in flags.items() if v is not None}}
    return ServeConfig.model_validate(merged)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def check_exposure(cfg: ServeConfig, insecure: bool) -> None:
    """An open server (no keys) may listen only on loopback, unless the user says so."""
    if cfg.api_keys is None and not insecure and not is_loopback(cfg.host):
        raise UsageError(
            f"serve.host={cfg.host} is not loopback and serve.api_keys is not set: anyone could "
            "call it; add keys (`shadowrl keys add`) or pass --insecure"
        )


def open_keys(cfg: ServeConfig, config: Config) -> KeyRing | None:
    from shadowrl.serve import KeyFileError, KeyRing

    if cfg.api_keys is None:
        return None
    path = Path(cfg.api_keys)
    path = path if path.is_absolute() else Path(config.run_dir) / path
    if not path.is_file():
        raise UsageError(f"serve.api_keys: no key file {path} (make one: shadowrl keys add)")
    try:
        return KeyRing(path)
    except KeyFileError as e:
        raise UsageError(str(e)) from e


def run(args: argparse.Namespace, config: Config) -> int:
    cfg = serve_config(args, config)
    check_exposure(cfg, args.insecure)
    keys = open_keys(cfg, config)
    cfg = cfg.model_copy(update={"admin_token": admin_token(cfg)})
    store = None if cfg.traces is None else open_trace_store(cfg.traces, cfg, config)
    try:
        serve(cfg, config, store, keys)
    finally:
        if store is not None:
            store.close()  # commits what was acknowledged, then stops the writer
    return 0


def admin_token(cfg: ServeConfig) -> str | None:
    """`serve.admin_token`, or the content of `serve.admin_token_file`."""
    if cfg.admin_token_file is None:
        return cfg.admin_token
    if cfg.admin_token is not None:
        raise UsageError("give serve.admin_token or serve.admin_token_file, not both")
    path = Path(cfg.admin_token_file).expanduser()
    try:
        token = path.read_text().strip()
    except OSError as e:
        raise UsageError(f"serve.admin_token_file: cannot read {path}: {e.strerror or e}") from e
    if not token:
        raise UsageError(f"serve.admin_token_file: {path} is empty")
    return token


def open_trace_store(traces: str, cfg: ServeConfig, config: Config) -> TraceStore:
    """`serve.traces` opened (and migrated) before the model loads: a bad URL fails fast."""
    from sqlalchemy.exc import SQLAlchemyError

    from shadowrl.serve.store import StoreError, open_store

    try:
        return open_store(traces, config.run_dir, cfg.traces_max_batch)
    except (StoreError, OSError, SQLAlchemyError) as e:
        raise UsageError(f"cannot open the trace store {traces!r}: {e}") from e


def agent_settings(cfg: ServeConfig, config: Config) -> AgentSettings | None:
    """The agent API's settings (None: off): the run's one EpisodeSpec, as training uses."""
    from pathlib import Path

    from shadowrl.commands.config import episode_spec
    from shadowrl.serve import AgentSettings

    if cfg.workspaces_root is None:
        return None
    root = Path(cfg.workspaces_root).expanduser()
    if not root.is_dir():
        raise UsageError(f"serve.workspaces_root {root} is not a directory")
    return AgentSettings(root.resolve(), episode_spec(config), cfg.max_sessions)


def session_brancher(config: Config, tokenizer: Any) -> Any:
    """What the review page branches agent sessions with (`realtime/branch_view.py`):
    the served agent config and sandbox, judged by the session's tests under the task cache."""
    from shadowrl.realtime import SessionBrancher, SessionTests

    judge = SessionTests(Path(config.tasks.cache_dir), config.sandbox, config.tasks.shaping)
    return SessionBrancher(tokenizer, config.agent, config.sandbox, judge)


def serve(
    cfg: ServeConfig, config: Config, store: TraceStore | None, keys: KeyRing | None = None
) -> None:
    import uvicorn

    from shadowrl.commands.policies import open_engine
    from shadowrl.serve.app import create_app

    agent = agent_settings(cfg, config)
    with open_engine(config.model.path, config, cfg.policy_version) as (engine, tokenizer):
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
            agent=agent,
            keys=keys,
            branch=None if agent is None else session_brancher(config, tokenizer),
        )
        try:
            uvicorn.run(app, host=cfg.host, port=cfg.port, log_level=cfg.log_level)
        except OSError as e:  # port in use, no permission, unknown host
            raise UsageError(f"cannot listen on {cfg.host}:{cfg.port}: {e.strerror or e}") from e
