"""A semantic index that cannot be built costs the episode its index, never the episode."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from shadowrl import episode
from shadowrl.search.config import SearchConfig
from shadowrl.tasks.prepare import PreparedTask
from shadowrl.tasks.reference import reference_agent_config, reference_policy


def test_index_failure_is_recorded_and_the_episode_still_graded(
    tiny: PreparedTask, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shadowrl.models import load_tokenizer

    monkeypatch.setattr(episode, "_INDEXES", {})  # nothing cached from other tests
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")  # the index cache lives "under" a file: saving it fails
    search = SearchConfig(embedder="hash", cache_dir=str(blocker / "search"))
    agent = reference_agent_config()
    assert "semantic_search" in agent.tools  # the default tools: the index is wanted
    tokenizer = load_tokenizer()
    sandbox = tiny.sandbox("local")
    try:
        policy = reference_policy("gold", tiny.task, tiny, tokenizer)
        traj, verdict = asyncio.run(
            episode.graded_episode(
                policy,
                sandbox,
                tiny,
                tokenizer=tokenizer,
                spec=episode.EpisodeSpec(agent=agent, search=search),
            )
        )
    finally:
        sandbox.close()
    assert "index_error" in traj.info and "not-a-dir" in traj.info["index_error"]
    assert verdict.resolved and traj.end == "submitted"
