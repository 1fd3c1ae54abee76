"""`POST /admin/rollback`: the previous deployed checkpoint is hot-swapped back in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import torch
from safetensors.torch import save_file
from serve_fakes import ScriptedPolicy

from shadowrl.serve.store import CheckpointRecord, TraceStore, registry

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)


def test_rollback_swaps_the_previous_checkpoint_in_and_marks_the_live_one(
    serve: Any, tokenizer: Any, tmp_path: Path, sqlite_trace_store: TraceStore
) -> None:
    store = sqlite_trace_store
    for v in (0, 1):
        (tmp_path / f"v{v}").mkdir()
        save_file({"w": torch.full((2,), float(v))}, str(tmp_path / f"v{v}" / "model.safetensors"))
        at = T0 + timedelta(hours=v)
        store.writer.submit(
            CheckpointRecord(str(tmp_path / f"v{v}"), v, "deployed", deployed_at=at)
        ).result()
    policy = ScriptedPolicy(tokenizer, "x")
    _, url = serve(policy, admin_token="s3cret", traces=store.writer, version=1)
    assert httpx.post(f"{url}/admin/rollback").status_code == 401
    auth = {"Authorization": "Bearer s3cret"}
    ok = httpx.post(f"{url}/admin/rollback", headers=auth)
    assert ok.status_code == 200, ok.text
    assert ok.json() == {
        "rolled_back": str(tmp_path / "v1"),
        "deployed": str(tmp_path / "v0"),
        "version": 0,
    }
    assert policy.swaps == [(0, False, {"w"})]
    assert httpx.get(f"{url}/health").json()["version"] == 0
    assert registry.get(store.engine, str(tmp_path / "v1")).status == "rolled_back"  # type: ignore[union-attr]
    again = httpx.post(f"{url}/admin/rollback", headers=auth)
    assert again.status_code == 409 and "no earlier" in again.json()["error"]["message"]


def test_rollback_without_a_trace_store_is_a_400(serve: Any, tokenizer: Any) -> None:
    _, url = serve(ScriptedPolicy(tokenizer, "x"), admin_token="t")
    resp = httpx.post(f"{url}/admin/rollback", headers={"Authorization": "Bearer t"})
    assert resp.status_code == 400
