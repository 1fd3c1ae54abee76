"""`/admin/*`: what the operator does to the live policy, in flight.

`/admin/load_weights` reads a Hugging Face checkpoint directory (every `*.safetensors`
shard, and the draft heads beside it) or a file of deltas, and hands it to the policy,
which applies it between two decode steps: running requests continue, later tokens
carry the new version. `/admin/rollback` restores the checkpoint deployed before the
live one (the trace store's registry) the same way and records why. Only a policy that
can take weights (`WeightSink`, the engine) is swappable; the routes depend on
`Auth.admin` (`app.py`), so only the admin token reaches here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shadowrl.serve.errors import APIError
from shadowrl.serve.server import OpenAIServer
from shadowrl.serve.store import CheckpointUpdate, registry
from shadowrl.types import WeightSink


class LoadWeightsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="HF checkpoint directory, or a safetensors file/dir of deltas.")
    delta: bool = Field(False, description="Add the tensors to the live weights.")
    version: int | None = Field(None, description="New policy version (default: current + 1).")


class Weights:
    """Swaps of `srv`'s policy, one at a time; `srv.version` is the live version."""

    def __init__(self, srv: OpenAIServer) -> None:
        self.srv = srv
        self.lock = asyncio.Lock()

    async def load(self, req: LoadWeightsRequest) -> dict[str, Any]:
        """Swap weights in flight: running requests continue, later tokens get the new version."""
        self.check_swappable()
        async with self.lock:
            version = self.srv.version + 1 if req.version is None else req.version
            tensors = await self.swap(req.path, version, req.delta)
        return {"version": version, "tensors": tensors, "delta": req.delta}

    def check_swappable(self) -> None:
        if not isinstance(self.srv.policy, WeightSink):
            raise APIError(400, "this policy cannot swap weights in flight", "path", "unsupported")

    async def swap(self, path: str, version: int, delta: bool = False) -> int:
        """Load `path` into the live policy as `version` (the caller holds `lock`)."""
        srv = self.srv
        assert isinstance(srv.policy, WeightSink)
        state = await asyncio.to_thread(read_safetensors, path)
        try:  # the engine applies it between two decode steps; wait off the event loop
            await asyncio.to_thread(srv.policy.update_weights, state, version, delta=delta)
        except (KeyError, ValueError, RuntimeError) as e:  # wrong names or shapes
            raise APIError(400, f"weights do not fit this model: {e}", "path") from e
        srv.version = version
        if srv.recorder is not None:
            srv.recorder.checkpoint = path
        return len(state)

    async def rollback(self) -> dict[str, Any]:
        """Restore the checkpoint deployed before the live one (the registry's), in flight."""
        self.check_swappable()
        if self.srv.recorder is None:
            raise APIError(
                400, "rollback needs the trace store (serve.traces)", None, "unsupported"
            )
        writer = self.srv.recorder.writer
        async with self.lock:
            target = await asyncio.to_thread(registry.rollback_target, writer.engine)
            if target is None:
                raise APIError(409, "no earlier deployed checkpoint to roll back to", None)
            current, previous = target
            await self.swap(previous.path, previous.version)
            why = "rolled back by hand (POST /admin/rollback)"
            await writer.write(CheckpointUpdate(current.path, "rolled_back", reason=why))
        return {"rolled_back": current.path, "deployed": previous.path, "version": self.srv.version}


def read_safetensors(path: str) -> dict[str, Any]:
    """A safetensors file, or every `*.safetensors` shard of a checkpoint directory; the
    draft heads beside it (`drafts.HEADS_FILE`) under the engine's names for them."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from shadowrl.inference import DRAFTS, HEADS_FILE

    p = Path(path)
    files = sorted(p.glob("*.safetensors")) if p.is_dir() else [p]
    if not files or not files[0].is_file():
        raise APIError(400, f"no safetensors weights at {path}", "path", "not_found")
    state: dict[str, Any] = {}
    for f in files:
        try:
            tensors = load_file(str(f))
        except (OSError, SafetensorError) as e:  # unreadable, or not a safetensors file
            raise APIError(400, f"cannot read {f} as safetensors: {e}", "path") from e
        prefix = DRAFTS if f.name == HEADS_FILE else ""
        state.update({prefix + k: v for k, v in tensors.items()})
    return state
