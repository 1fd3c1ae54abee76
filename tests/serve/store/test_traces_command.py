"""`shadowrl traces list | show | export` on a store the writer filled (both databases)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from store_builders import write_scenario

from shadowrl.commands.errors import UsageError
from shadowrl.commands.main import main
from shadowrl.commands.traces import parse_since
from shadowrl.serve.store import NewSession, TraceStore


@pytest.fixture
def url(open_store: Callable[..., TraceStore], store_url: str) -> str:
    store = open_store()
    write_scenario(store.writer)
    store.close()
    return store_url


def test_list_show_export(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flag = f"--serve.traces={url}"
    assert main(["traces", "list", flag]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed[1:]] == ["agent1", "chat1", "chat2"]
    assert "thumbs_up" in next(line for line in listed if line.startswith("chat1"))

    assert main(["traces", "show", "r2", "--tokens", flag]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("session chat1")
    assert "generated_ids: [8]" in shown and "feedback thumbs_up" in shown

    out = tmp_path / "train.jsonl"
    assert main(["traces", "export", "--format", "training", "--out", str(out), flag]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["request_ids"][-1] for r in rows) == ["q2", "r2", "r3"]
    assert {"segments", "reward", "task_id", "end"} <= set(rows[0])

    assert main(["traces", "export", "--format", "swebench", "--since", "2026-06-01", flag]) == 0
    assert json.loads(capsys.readouterr().out)["instance_id"] == "repo__1"


def test_swebench_refuses_when_no_session_qualifies(
    open_store: Callable[..., TraceStore], store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    open_store().writer.submit(NewSession("chat-only")).result()
    argv = ["traces", "export", "--format", "swebench", f"--serve.traces={store_url}"]
    assert main(argv) == 1
    assert "no agent session with a diff" in capsys.readouterr().err


def test_relative_path_is_under_run_dir_and_a_missing_store_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (cwd := tmp_path / "here").mkdir()
    monkeypatch.chdir(cwd)
    config = tmp_path / "c.yaml"
    config.write_text("serve:\n  traces: traces.db\n")  # in a config file: under run_dir
    argv = ["traces", "--config", str(config), "list", f"--run_dir={tmp_path}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"no trace store at {tmp_path.resolve() / 'traces.db'}" in err
    assert not (tmp_path / "traces.db").exists()  # reading never creates a store
    # on the command line: under the working directory
    assert main(["traces", "list", f"--run_dir={tmp_path}", "--serve.traces=traces.db"]) == 2
    assert f"no trace store at {cwd.resolve() / 'traces.db'}" in capsys.readouterr().err
    assert main(["traces", "list", "--serve.traces=null"]) == 2
    assert "tracing is off" in capsys.readouterr().err


def test_parse_since() -> None:
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    assert parse_since("2h", now) == now - timedelta(hours=2)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("2026-11-30T08:00", now) == datetime(2026, 11, 30, 8, tzinfo=UTC)
    assert parse_since("2026-11-30T08:00+01:00", now) == datetime(2026, 11, 30, 7, tzinfo=UTC)
    assert parse_since(None, now) is None
    with pytest.raises(UsageError):
        parse_since("yesterday", now)
