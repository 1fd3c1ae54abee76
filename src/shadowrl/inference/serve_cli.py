"""`shadowrl serve`: the policy behind an OpenAI-compatible endpoint, in production shape.

The model is loaded with the run's `model` section and wrapped in the batching
engine, so what users talk to is exactly what training and evaluation drive.
`serve_in_thread` runs the same app on a free localhost port in-process, which is
how tests, the evaluator and the real-time loop get a real server without a fork.
"""

from __future__ import annotations

import argparse
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from fastapi import FastAPI

    from shadowrl.config import Config


class ServeConfig(BaseModel):
    """Where and as what the policy is served."""

    model_config = ConfigDict(extra="forbid")
    host: str = Field(
        default="127.0.0.1", description="Interface to bind; 0.0.0.0 to listen on all."
    )
    port: int = Field(default=8000, ge=0, le=65535, description="TCP port (0 picks a free one).")
    model_name: str | None = Field(
        default=None, description="The `model` id clients ask for; None: the `model.path` served."
    )
    admin_token: str | None = Field(
        default=None,
        description="Bearer token required by /admin/*; None leaves admin open (localhost only!).",
    )
    max_context_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Prompt + completion limit; None uses the model's max positions.",
    )
    log_level: str = Field(default="info", description="uvicorn log level.")


def add_serve_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="override serve.host")
    parser.add_argument("--port", type=int, help="override serve.port")
    parser.add_argument("--model-name", help="override serve.model_name")


def serve_config(args: argparse.Namespace, config: Config) -> ServeConfig:
    """The `serve` section with CLI flags on top."""
    base = config.serve
    flags = {"host": args.host, "port": args.port, "model_name": args.model_name}
    return base.model_copy(update={k: v for k, v in flags.items() if v is not None})


def cmd_serve(args: argparse.Namespace, config: Config) -> int:
    import uvicorn

    from shadowrl.inference.engine import Engine
    from shadowrl.inference.server import create_app
    from shadowrl.models import load_model

    cfg = serve_config(args, config)
    model, tokenizer = load_model(config.model)
    positions = min(int(model.config.max_position_embeddings), config.engine.max_seq_len)
    context = min(cfg.max_context_tokens or positions, positions)
    name = cfg.model_name or config.model.path  # what `eval`'s remote opener asks for
    with Engine(model, tokenizer, config.engine) as engine:
        app = create_app(
            engine, tokenizer, name, max_context_tokens=context, admin_token=cfg.admin_token
        )
        uvicorn.run(app, host=cfg.host, port=cfg.port, log_level=cfg.log_level)
    return 0


@contextmanager
def serve_in_thread(app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Run `app` under uvicorn in a daemon thread; yield its base URL, stop it on exit."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("uvicorn exited before it started")
            threading.Event().wait(0.01)
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
