"""Isolated, forkable workspaces: `create_sandbox(workspace, backend="auto")`."""

from shadowrl.sandbox.base import ExecResult, Limits, Sandbox, Snapshot

__all__ = ["ExecResult", "Limits", "Sandbox", "Snapshot", "create_sandbox"]


def create_sandbox(workspace, backend: str = "auto", limits: Limits | None = None) -> Sandbox:  # type: ignore[no-untyped-def]
    """Placeholder until the sandbox backends land (being implemented now)."""
    raise NotImplementedError
