"""`shadowrl replay <trace id> --branch K --from-turn N` on a session recorded over HTTP:
the session is rebuilt before turn N, continued K times by a deterministic fixture
policy (a scripted policy behind an OpenAI-compatible server, passed as `--model URL`),
each continuation judged by the workspace's tests through the grader, and the diffs are
printed side by side; an unfaithful rebuild is refused with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shadowrl.commands.main import main
from shadowrl.serve.app import create_app
from shadowrl.serve.threaded import serve_in_thread

from .test_branch import CACHE, NEW, OLD, Continuations, Served, call, served, tokenizer  # noqa: F401  (the fixtures, used by name)


def replay(at: Served, sid: str, url: str, *args: str) -> list[str]:
    store = Path(str(at.store.engine.url.database))
    return ["replay", sid, *args, "--model", url, f"--serve.traces=sqlite:///{store}",
            "--sandbox.backend=local", "--model.path=tiny", f"--tasks.cache_dir={CACHE}"]  # fmt: skip


def test_branches_of_a_recorded_session_side_by_side(
    served: Served, tokenizer: Any, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("COLUMNS", "200")  # two columns of diff lines, unwrapped
    sid = served.session("FIX the median")
    fix = call("edit_file", path="stats.py", old=OLD, new=NEW)
    note = call("write_file", path="NOTES.md", content="median looked fine to me\n")
    policy = Continuations(tokenizer, [fix, note]).policy  # at turn 3: a fix, or a note
    with serve_in_thread(create_app(policy, tokenizer, "tiny", max_context_tokens=4096)) as url:
        capsys.readouterr()
        assert main(replay(served, sid, url, "--branch", "2", "--from-turn", "3")) == 0
        out = capsys.readouterr().out
        assert f"{sid} · 2 branches from turn 3" in out
        assert "+    values = sorted(values)" in out and "+median looked fine to me" in out
        assert "score 1" in out and "score 0" in out and "they differ" in out
        assert out.count("submitted") == 2  # each continuation submitted after its edit

        assert main(replay(served, sid, url, "--branch", "2", "--from-turn", "9")) == 2
        assert "--from-turn in 1..5" in capsys.readouterr().err
        # the workspace changed since the session: refused, with the reason
        (served.root / "demo" / "stats.py").write_text("# rewritten since\n")
        assert main(replay(served, sid, url, "--branch", "2", "--from-turn", "3")) == 1
        assert "differs from the one the session started on" in capsys.readouterr().out
