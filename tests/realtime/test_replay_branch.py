"""`shadowrl replay <trace id> --branch K --from-turn N` on a session recorded over HTTP:
the session is rebuilt before turn N, continued K times by a deterministic fixture
policy (a scripted policy behind an OpenAI-compatible server, passed as `--model URL`),
each continuation judged by the workspace's tests through the grader, and the diffs are
printed side by side; an unfaithful rebuild is refused with its reason. The `/ui` page
does the same on a session's page, in a real headless Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shadowrl.commands.main import main
from shadowrl.realtime.branch_view import SessionBrancher
from shadowrl.realtime.judge import SessionTests
from shadowrl.serve.app import create_app
from shadowrl.serve.auth import KeyRing
from shadowrl.serve.threaded import serve_in_thread

from .served import AGENT, CACHE, NEW, OLD, SANDBOX, Continuations, Served, call


def replay(at: Served, sid: str, url: str, *args: str) -> list[str]:
    store = Path(str(at.store.engine.url.database))
    return ["replay", sid, *args, "--model", url, f"--serve.traces=sqlite:///{store}",
            "--sandbox.backend=local", "--model.path=tiny", f"--tasks.cache_dir={CACHE}"]  # fmt: skip


def test_branches_of_a_recorded_session_side_by_side(
    served: Served, tokenizer: Any, capsys: pytest.CaptureFixture[str],
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
        assert "a turn in 1..5" in capsys.readouterr().err
        # the workspace changed since the session: refused, with the reason
        (served.root / "demo" / "stats.py").write_text("# rewritten since\n")
        assert main(replay(served, sid, url, "--branch", "2", "--from-turn", "3")) == 1
        assert "differs from the one the session started on" in capsys.readouterr().out


def test_the_review_page_branches_a_session_in_a_real_browser(
    served: Served, tokenizer: Any, tmp_path: Path, browser: Any,
) -> None:  # fmt: skip
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    sid = served.session("FIX the median")
    fix = call("edit_file", path="stats.py", old=OLD, new=NEW)
    note = call("write_file", path="NOTES.md", content="median looked fine to me\n")
    policy = Continuations(tokenizer, [fix, note]).policy  # the server's policy now
    brancher = SessionBrancher(tokenizer, AGENT, SANDBOX, SessionTests(CACHE, SANDBOX))
    app = create_app(
        policy, tokenizer, "tiny-test", traces=served.store.writer, max_context_tokens=4096,
        keys=KeyRing(tmp_path / "keys.json"), branch=brancher,
    )  # fmt: skip
    with serve_in_thread(app) as url:
        wait = WebDriverWait(browser, 60)
        browser.get(f"{url}/ui/sessions/{sid}")
        key_input = wait.until(ec.visibility_of_element_located((By.ID, "key-input")))
        key_input.send_keys(served.keys["alice"])
        browser.find_element(By.ID, "key-save").click()
        turn = wait.until(ec.visibility_of_element_located((By.ID, "branch-turn")))
        turn.clear()
        turn.send_keys("3")
        browser.find_element(By.ID, "branch-run").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, '.branch[data-branch="2"]')))
        columns = [c.text for c in browser.find_elements(By.CSS_SELECTOR, ".branch")]
    assert len(columns) == 2
    fixed = next(c for c in columns if "+    values = sorted(values)" in c)
    noted = next(c for c in columns if "+median looked fine to me" in c)
    assert "score 1" in fixed and "score 0" in noted and "submitted" in fixed
