"""Production surfaces: the OpenAI-compatible server, its schemas and the remote policy.

What users talk to runs the same prompt rendering and tool-call parsing as training
(`shadowrl.agent`), in front of the batched engine (`shadowrl.inference`). Nothing here
is imported by `rl` or `eval`: to them a served model is one more `Policy`.

Other packages import from here, from `serve.app` (the server: `create_app`), from
`serve.store` (the trace store) and from `serve.workspaces` (snapshots of a user's
workspace), never from the other modules. What is re-exported here is light (no torch,
no fastapi): key files, the agent API's settings, the remote policy and the client-error
type.
"""

from shadowrl.serve.auth import (
    KeyFileError,
    KeyRing,
    add_key,
    private_key_ids,
    read_keys,
    revoke_key,
)
from shadowrl.serve.config import AgentSettings
from shadowrl.serve.errors import APIError
from shadowrl.serve.remote import RemotePolicy

__all__ = [
    "APIError",
    "AgentSettings",
    "KeyFileError",
    "KeyRing",
    "RemotePolicy",
    "add_key",
    "private_key_ids",
    "read_keys",
    "revoke_key",
]
