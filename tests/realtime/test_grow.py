"""`shadowrl bench grow`: failed sessions in a real trace store become validated tasks of
a new suite version; accepted, untestable and duplicate sessions do not; a session on a
task training sees never reaches the held-out split; the gate refuses across versions."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from shadowrl.episode import EpisodeSpec
from shadowrl.eval.gate import PinMismatch, check_pins
from shadowrl.eval.result import EvalResult, Pins
from shadowrl.models import load_tokenizer
from shadowrl.realtime.grow import SuppliedTests, candidate, grow_suite
from shadowrl.sandbox import SandboxConfig
from shadowrl.serve.store import FeedbackRecord, NewSession, TraceStore
from shadowrl.serve.store.db import open_engine
from shadowrl.serve.store.queries import get_session
from shadowrl.tasks.load import load_suite
from shadowrl.tasks.prepare import prepare, task_prompt
from shadowrl.tasks.task import load_tasks
from shadowrl.tasks.versions import manifest, version_of, versions

CACHE = Path(
    os.environ.get("SHADOWRL_TEST_CACHE", Path(tempfile.gettempdir()) / "shadowrl-test-cache")
)
SPEC = EpisodeSpec(sandbox=SandboxConfig(backend="local")).for_reference()


def session(
    store: TraceStore, ws: Path, sid: str, task_id: str | None, *said: str, notes: bool = True
) -> None:
    """An agent session on a checkout of the demo task (with a file of the user's own
    unless `notes` is False), with the user's signals."""
    (demo,) = load_suite("demo")
    shutil.copytree(prepare(demo, CACHE).workspace, ws / sid)
    if notes:
        (ws / sid / "NOTES.md").write_text("median() misbehaves on my data\n")
    request = task_prompt(demo)
    store.writer.submit(
        NewSession(sid, "agent", None, "cancelled", request, task_id, str(ws / sid))
    ).result()
    for signal in said:
        store.writer.submit(FeedbackRecord(sid, signal)).result()  # type: ignore[arg-type]


@pytest.mark.slow  # five reference episodes, each graded by the task's tests: ~30-90 s
def test_failed_sessions_become_a_validated_new_version(tmp_path: Path) -> None:
    store = TraceStore(open_engine(f"sqlite:///{tmp_path / 'traces.db'}"))
    ws = tmp_path / "ws"
    session(store, ws, "s-rejected", "demo-median", "reject", "followup_dissatisfied")
    session(store, ws, "s-accepted", "demo-median", "accept", "keep")
    session(store, ws, "s-again", "demo-median", "reject")  # the same workspace and request
    session(store, ws, "s-pristine", "demo-median", "reject", notes=False)  # = the source task
    session(store, ws, "s-unknown", None, "reject")
    session(store, ws, "s-passing", None, "accept", "revert")
    # a person's tests for s-passing, which pass on the buggy workspace: not a task
    supplied = [SuppliedTests(session_id="s-passing", test_patch="",
                              FAIL_TO_PASS=("test_stats.py::TestStats::test_mean",))]  # fmt: skip
    base = load_suite("demo")
    sources = {t.instance_id: t for t in base}
    root = tmp_path / "bench" / "demo"
    tok = load_tokenizer("tiny")
    run = lambda: grow_suite(  # noqa: E731
        store.engine, root, base, sources, set(), supplied, cache_dir=CACHE, tokenizer=tok,
        spec=SPEC,
    )  # fmt: skip
    path, found = asyncio.run(run())
    why = {f.session_id: f.why for f in found}
    assert set(why) == {"s-rejected", "s-again", "s-pristine", "s-unknown", "s-passing"}
    assert why["s-rejected"] == "added (heldout)"
    assert why["s-again"].startswith("the same task as demo-median--")
    assert why["s-pristine"] == "the same task as demo-median"
    assert why["s-unknown"].startswith("no tests")
    assert why["s-passing"] == "the tests already pass on the snapshot"
    assert path is not None and [p.name for p in versions(root)] == ["v0001.jsonl", "v0002.jsonl"]
    (grown,) = [t for t in load_tasks(path, "heldout") if t.instance_id != "demo-median"]
    assert grown.problem_statement == base[0].problem_statement  # the request, not re-wrapped
    assert grown.FAIL_TO_PASS == base[0].FAIL_TO_PASS and grown.patch == base[0].patch
    assert [t.instance_id for t in load_tasks(versions(root)[0])] == ["demo-median"]
    book = manifest(root)["versions"]
    assert (
        book[1]["added"] == [grown.instance_id]
        and book[0]["heldout_hash"] != book[1]["heldout_hash"]
    )
    assert version_of(f"{path}:heldout") == "demo@v0002"
    # a rerun adds nothing and writes no version (the left-out sessions are listed again)
    again, listed = asyncio.run(run())
    assert again is None and len(versions(root)) == 2
    assert {f.session_id for f in listed} == {"s-again", "s-pristine", "s-unknown", "s-passing"}
    store.close()


def test_sessions_on_tasks_training_sees_never_enter_the_held_out_split(tmp_path: Path) -> None:
    store = TraceStore(open_engine(f"sqlite:///{tmp_path / 'traces.db'}"))
    session(store, tmp_path / "ws", "s1", "demo-median", "reject")
    view = get_session(store.engine, "s1")
    assert view is not None
    (demo,) = load_suite("demo")  # held out
    train_task = demo.model_copy(update={"split": "train"})
    seeds = tmp_path / "seeds"
    assert candidate(view, demo, None, set(), seeds).split == "heldout"  # type: ignore[union-attr]
    # the users' suite holds it (the cycle trains on their sessions): train
    assert candidate(view, demo, None, {"demo-median"}, seeds).split == "train"  # type: ignore[union-attr]
    assert candidate(view, train_task, None, set(), seeds).split == "train"  # type: ignore[union-attr]
    store.close()


def pins(version: str | None) -> Pins:
    return Pins(suite="x", suite_hash="h", suite_version=version, harness_version="v",
                config_digest="c", config_sections={}, policy="p")  # fmt: skip


def test_the_gate_refuses_to_compare_results_across_suite_versions() -> None:
    a = EvalResult.model_construct(pins=pins("demo@v0001"), samples=1, tasks=[])
    b = EvalResult.model_construct(pins=pins("demo@v0002"), samples=1, tasks=[])
    with pytest.raises(PinMismatch, match="suite version demo@v0002 != demo@v0001"):
        check_pins(b, a)
    check_pins(a, EvalResult.model_construct(pins=pins("demo@v0001"), samples=1, tasks=[]))
