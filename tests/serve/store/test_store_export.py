"""Reading and exporting traces: sessions, branches, training rows, SWE-bench rows."""

from __future__ import annotations

from collections.abc import Callable

from store_builders import NEW, write_scenario

from shadowrl.rl.demos import trajectory_from_json
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.export import export_swebench, export_training
from shadowrl.serve.store.queries import get_request, get_session, list_sessions
from shadowrl.types import Segment


def _store(open_store: Callable[..., TraceStore]) -> TraceStore:
    store = open_store()
    write_scenario(store.writer)
    return store


def test_list_and_show(open_store: Callable[..., TraceStore]) -> None:
    engine = _store(open_store).engine
    listed = {s.id: s for s in list_sessions(engine)}
    assert set(listed) == {"chat1", "chat2", "agent1"}
    assert (listed["chat1"].requests, listed["chat1"].generated_tokens) == (3, 5)
    assert listed["chat1"].signals == ("thumbs_up",)
    assert {s.id for s in list_sessions(engine, since=NEW)} == {"chat1", "agent1"}

    for ident in ("chat1", "r3"):  # a session id or one of its requests
        view = get_session(engine, ident)
        assert view is not None and view.session.id == "chat1"
        assert [r.id for r in view.requests] == ["r1", "r2", "r3"]
    agent = get_session(engine, "agent1")
    assert agent is not None and agent.steps[0].results == ["a.py"]
    assert agent.session.status == "done"
    assert get_session(engine, "nope") is None
    r2 = get_request(engine, "r2")
    assert r2 is not None and (r2.parent_id, r2.generated_ids, r2.versions) == ("r1", (8,), (2,))
    assert r2.row.seed == 11 and r2.row.temperature == 0.7
    assert get_request(engine, "nope") is None


def test_training_rows_follow_branches_and_keep_earlier_replies_trainable(
    open_store: Callable[..., TraceStore],
) -> None:
    rows = {tuple(r["request_ids"]): r for r in export_training(_store(open_store).engine)}
    assert set(rows) == {("r1", "r2"), ("r1", "r3"), ("q1", "q2")}

    r2 = trajectory_from_json(rows["r1", "r2"])  # the demo store reads the rows back
    assert r2.segments == (
        Segment(
            (1, 2, 3, 4, 5, 6, 7, 8),
            (False, False, False, True, True, False, False, True),
            (0.0, 0.0, 0.0, -4 / 8, -5 / 8, 0.0, 0.0, -8 / 8),
            (-1, -1, -1, 4 % 3, 5 % 3, -1, -1, 8 % 3),
        ),
    )
    assert rows["r1", "r2"]["token_exact"] is True
    assert [f["signal"] for f in rows["r1", "r2"]["feedback"]] == ["thumbs_up"]
    r3 = trajectory_from_json(rows["r1", "r3"])
    assert [s.token_ids for s in r3.segments] == [(1, 2, 3, 4, 5, 9, 10, 11)]

    # rewritten history: the second prompt does not extend the first, so a new segment
    q = trajectory_from_json(rows["q1", "q2"])
    assert [s.token_ids for s in q.segments] == [(1, 2, 3), (1, 9, 9, 4)]
    assert rows["q1", "q2"]["token_exact"] is False


def test_since_and_swebench(open_store: Callable[..., TraceStore]) -> None:
    engine = _store(open_store).engine
    assert {r["session_id"] for r in export_training(engine, since=NEW)} == {"chat1"}
    assert list(export_swebench(engine)) == [
        {
            "instance_id": "repo__1",
            "model_name_or_path": "shadowrl",
            "model_patch": "--- a/a.py\n+++ b/a.py\n",
        }
    ]
