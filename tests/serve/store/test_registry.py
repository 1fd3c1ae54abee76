"""The checkpoint registry on SQLite and PostgreSQL: what is live, what a rollback restores."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from shadowrl.serve.store import CheckpointRecord, CheckpointUpdate, TraceStore, registry

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)


def test_live_is_the_latest_deployed_and_a_rollback_restores_the_one_before(
    open_store: Callable[..., TraceStore],
) -> None:
    store = open_store()
    w = store.writer
    assert registry.live(store.engine) is None and registry.next_version(store.engine) == 0
    w.submit(CheckpointRecord("ck/0", 0, "deployed", deployed_at=T0, cycle=0)).result()
    for v in (1, 2, 3):
        w.submit(CheckpointRecord(f"ck/{v}", v, parent=f"ck/{v - 1}", cycle=v)).result()
    w.submit(
        CheckpointUpdate("ck/1", "deployed", {"promote": True}, "ok", T0 + timedelta(1))
    ).result()
    w.submit(CheckpointUpdate("ck/2", "rejected", {"promote": False}, "alarm")).result()
    w.submit(CheckpointUpdate("ck/3", "deployed", None, "ok", T0 + timedelta(2))).result()
    live = registry.live(store.engine)
    assert live is not None and (live.path, live.deployed_at) == ("ck/3", T0 + timedelta(2))
    target = registry.rollback_target(store.engine)
    assert target is not None and [c.path for c in target] == ["ck/3", "ck/1"]
    w.submit(CheckpointUpdate("ck/3", "rolled_back", reason="watch")).result()
    assert registry.live(store.engine).path == "ck/1"  # type: ignore[union-attr]
    assert registry.rollback_target(store.engine)[1].path == "ck/0"  # type: ignore[index]
    rows = {c.path: c for c in registry.history(store.engine)}
    assert rows["ck/2"].status == "rejected" and rows["ck/2"].gate == {"promote": False}
    assert rows["ck/3"].parent == "ck/2" and rows["ck/3"].cycle == 3
    assert registry.next_version(store.engine) == 4
