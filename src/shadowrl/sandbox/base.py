"""The sandbox interface every backend implements.

A sandbox is an isolated workspace where an agent's commands run. The two operations
RL needs beyond `exec` are `snapshot()` (freeze the current state, cheaply) and
`Snapshot.fork()` (a new, independent sandbox starting from that state in O(1)), so
a GRPO group of G rollouts starts from one prepared state.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

Backend = Literal["auto", "overlay", "local"]


class Limits(BaseModel):
    """Resource limits applied to everything a sandbox runs."""

    memory_mb: int = Field(
        1024, ge=1, description="Address-space / cgroup memory cap per sandbox, MiB."
    )
    pids: int = Field(128, ge=1, description="Maximum number of processes/threads alive at once.")
    cpu_seconds: int = Field(
        60, ge=1, description="CPU-time limit per exec call (RLIMIT_CPU), seconds."
    )
    file_size_mb: int = Field(64, ge=1, description="Largest single file a process may write, MiB.")
    disk_mb: int = Field(512, ge=1, description="Total bytes the workspace may grow by, MiB.")
    output_bytes: int = Field(
        64_000, ge=1, description="Cap on captured stdout and stderr, each, per exec."
    )
    cpu_shares: float = Field(
        1.0, gt=0, description="CPU cores' worth of time the sandbox may use."
    )


class PoolConfig(BaseModel):
    """Warm pools of started sandboxes per prepared snapshot (`sandbox.pool:`)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(
        False, description="Keep started forks of each prepared task ready to claim."
    )
    min_ready: int = Field(1, ge=0, description="Started forks kept ready even when idle.")
    max_ready: int = Field(16, ge=1, description="Most started forks kept ready per snapshot.")
    idle_s: float = Field(
        5.0, gt=0, description="Seconds a surplus may go unclaimed before the target halves."
    )
    max_snapshots: int = Field(
        8, ge=1, description="Pools kept at once; the least recently claimed one is closed."
    )


class SandboxConfig(BaseModel):
    """Where agent commands run (`sandbox:` in the config tree)."""

    model_config = ConfigDict(extra="forbid")
    backend: Backend = Field(
        "auto",
        description="'overlay' (namespaces + overlayfs), 'local' (no isolation), or 'auto' "
        "(overlay where the machine allows it, else local with a warning).",
    )
    limits: Limits = Field(default_factory=Limits, description="Resource limits per sandbox.")
    pool: PoolConfig = Field(
        default_factory=PoolConfig,
        description="Warm pools of started forks per prepared task, for RL rollouts.",
    )


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one command; `truncated` says the output hit `Limits.output_bytes`."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False


class Sandbox(Protocol):
    """An isolated, forkable workspace. Paths are relative to the workspace root."""

    backend: str

    def exec(self, cmd: str, timeout: float = 30.0) -> ExecResult:
        """Run `cmd` with `/bin/sh -c` in the workspace root, killing all it started on exit."""
        ...

    def read_file(self, path: str | Path) -> bytes:
        """Read a file inside the workspace; refuses paths (or symlinks) leading outside."""
        ...

    def write_file(self, path: str | Path, data: str | bytes) -> None:
        """Create or replace a file inside the workspace (parents created)."""
        ...

    def list_files(self) -> list[str]:
        """All regular files in the workspace, relative, sorted."""
        ...

    def changed_files(self) -> list[str]:
        """Paths that differ from the workspace the root sandbox was created from."""
        ...

    def snapshot(self) -> Snapshot:
        """Freeze the current state; later writes to this sandbox do not affect it."""
        ...

    def close(self) -> None:
        """Kill everything the sandbox started and remove its mounts and temp dirs."""
        ...


class Snapshot(Protocol):
    """An immutable state of a sandbox."""

    def fork(self) -> Sandbox:
        """A new independent sandbox starting from this state (O(1) in workspace size)."""
        ...

    def release(self) -> None:
        """Drop this snapshot's layers once no sandbox uses them."""
        ...
