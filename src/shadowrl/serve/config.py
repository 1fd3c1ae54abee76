"""The `serve:` section of the config tree: where and as what the policy is served."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shadowrl.episode import EpisodeSpec


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
        description="Bearer token required by /admin/* (load weights); None: admin is refused "
        "(unless admin_token_file is set). On a command line `ps` shows it: prefer the file.",
    )
    admin_token_file: str | None = Field(
        default=None,
        description="A file whose content (stripped) is the admin token: keeps it off the "
        "command line. Give this or admin_token, not both.",
    )
    api_keys: str | None = Field(
        default=None,
        description=(
            "Key file (`shadowrl keys add`; digests only), relative to run_dir in a config file "
            "and to the working directory on the command line: every route then "
            "needs `Authorization: Bearer <key>` and a key sees only its own sessions; None: "
            "open, loopback only unless `serve --insecure`."
        ),
    )
    policy_version: int = Field(
        default=0,
        ge=0,
        description="Policy version stamped on tokens of the weights served at start (the "
        "registry's version of model.path; a hot swap sets the next one).",
    )
    max_context_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Prompt + completion limit; None uses the model's max positions.",
    )
    traces: str | None = Field(
        default="traces.db",
        description=(
            "Trace store: a SQLAlchemy URL (postgresql+psycopg://user@host/db) or a SQLite "
            "file path, relative to run_dir in a config file and to the working directory on "
            "the command line; the server records every completion into it "
            "and takes /v1/feedback, `shadowrl traces` reads it; None: no store."
        ),
    )
    traces_max_batch: int = Field(
        default=512, ge=1, description="Most trace writes committed in one transaction."
    )
    feedback_window: float | None = Field(
        default=86400.0,
        gt=0,
        description="Seconds after a session's last request with no feedback before it is "
        "final as `silent` (a feedback row); None: never.",
    )
    max_n: int = Field(
        default=16,
        ge=1,
        description="Most choices one request may ask for (chat: n; completions: n x prompts); "
        "more is a 400.",
    )
    max_tokens_cap: int = Field(
        default=4096,
        ge=1,
        description="Most new tokens per choice: an explicit max_tokens above it is a 400, "
        "an omitted one defaults to min(context room, this).",
    )
    workspaces_root: str | None = Field(
        default=None,
        description="Directory agent sessions' workspaces must lie under (POST "
        "/v1/agent/sessions); a path outside it, a symlink out of it or '..' is a 400. "
        "None: the agent API is off (404).",
    )
    max_sessions: int = Field(
        default=4,
        ge=1,
        description="Most agent sessions running their loop at once; one more is a 429 "
        "(no queue: retry). Each runs in its own sandbox.",
    )
    log_level: Literal["critical", "error", "warning", "info", "debug", "trace"] = Field(
        default="info", description="uvicorn log level."
    )


@dataclass(frozen=True)
class AgentSettings:
    """What `create_app` needs to offer agent sessions (from `serve:` and the run's spec)."""

    workspaces_root: Path
    spec: EpisodeSpec = field(default_factory=EpisodeSpec)
    max_sessions: int = 4
    snapshots_dir: Path | None = None  # where workspace copies go; None: the temp dir
