"""kill -9 of a process writing through the TraceWriter: every write it acknowledged is
in the store after reopening, no row is half-written, and the store carries on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from crash_child import tokens
from sqlalchemy import select
from sqlalchemy.orm import Session
from store_builders import request

from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.db import open_engine
from shadowrl.serve.store.queries import RequestView
from shadowrl.serve.store.schema import TraceRequest

CHILD = Path(__file__).with_name("crash_child.py")
ACKED_BEFORE_KILL = 400


def _run_and_kill(url: str) -> set[str]:
    """Start the child, SIGKILL it once it acknowledged enough; the ids it acknowledged."""
    src = str(Path(__file__).parents[3] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, str(CHILD), url], stdout=subprocess.PIPE, env=env, text=True
    )
    assert child.stdout is not None
    acked: set[str] = set()
    try:
        for line in child.stdout:
            if line.startswith("ok "):
                acked.add(line.split()[1])
            if len(acked) >= ACKED_BEFORE_KILL:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate(timeout=60)
    # lines flushed before the kill still count; a torn last line (no newline) does not
    acked |= {line.split()[1] for line in rest.splitlines(keepends=True) if line.endswith("\n")}
    assert child.returncode == -signal.SIGKILL
    return acked


def test_kill_9_loses_no_acknowledged_write(store_url: str) -> None:
    acked = _run_and_kill(store_url)
    assert len(acked) >= ACKED_BEFORE_KILL

    with TraceStore(open_engine(store_url)) as store:  # reopen: recovery + migration check
        with Session(store.engine) as db:
            rows = db.execute(select(TraceRequest)).scalars().all()
        stored = {}
        for row in rows:
            view = RequestView.of(row)  # raises TornRow for a half-written row
            assert (view.prompt_ids, view.generated_ids) == tokens(view.id)
            assert view.logprobs == tuple(-t / 8 for t in view.generated_ids)
            stored[view.id] = view
        assert acked <= set(stored), f"lost {sorted(acked - set(stored))[:5]}"

        store.writer.submit(request("after-restart", "crash")).result()  # carries on
    engine = open_engine(store_url)
    with Session(engine) as db:
        assert db.get(TraceRequest, "after-restart") is not None
    engine.dispose()
