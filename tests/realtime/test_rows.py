"""Recorded sessions become RL rows: importance ratio 1 for the serving weights, sessions
left out and counted (silent, off-distribution, stale), advantages mean-centred per cohort."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from shadowrl.agent.tools import ToolSet
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.models import tiny_model
from shadowrl.realtime.config import RowsConfig
from shadowrl.realtime.rewards import RewardConfig, session_reward
from shadowrl.realtime.rows import cohort_groups, production_batch
from shadowrl.realtime.sessions import ProductionSession, read_sessions
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.forward import token_logprobs
from shadowrl.serve.app import create_app
from shadowrl.serve.store import FeedbackRecord, NewSession, RequestRecord, TraceStore
from shadowrl.serve.store.db import open_engine
from shadowrl.serve.threaded import serve_in_thread

SCHEMAS = ToolSet.from_names(["read_file", "edit_file", "submit"]).schemas()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TraceStore]:
    s = TraceStore(open_engine(f"sqlite:///{tmp_path / 'traces.db'}"))
    yield s
    s.close()


def rewarded(store: TraceStore, tok: Any) -> tuple[list[ProductionSession], list[Any]]:
    sessions = list(read_sessions(store.engine, tok, SCHEMAS))
    rewards = [session_reward(s.signals, s.conduct, RewardConfig()) for s in sessions]
    return sessions, rewards


def test_a_row_served_by_the_current_weights_has_importance_ratio_one(
    store: TraceStore,
) -> None:
    model, tok = tiny_model(seed=0)
    cfg = EngineConfig(max_batch=4, max_seq_len=512, initial_kv_len=64)
    with Engine(model, tok, cfg) as engine:
        app = create_app(engine, tok, "tiny", max_context_tokens=512, traces=store.writer)
        with serve_in_thread(app) as url:
            for sid, prompt in (("s-good", [1, 2, 3, 4]), ("s-bad", [5, 6, 7])):
                body = {"model": "tiny", "prompt": prompt, "max_tokens": 12, "temperature": 1.0}
                r = httpx.post(
                    f"{url}/v1/completions", json=body, headers={"X-Session-Id": sid}, timeout=120
                )
                r.raise_for_status()
            for sid, signal in (("s-good", "accept"), ("s-bad", "reject")):
                fb = {"session_id": sid, "signal": signal}
                httpx.post(f"{url}/v1/feedback", json=fb, timeout=120).raise_for_status()
    sessions, rewards = rewarded(store, tok)
    groups, counts = cohort_groups(sessions, rewards, trainer_version=0, cfg=RowsConfig())
    assert (counts.trained, counts.cohorts) == (2, 1)
    batch = production_batch(groups, trainer_version=0, cfg=RowsConfig(), train=TrainConfig())
    (mb,) = batch.microbatches
    assert sorted(mb.advantages.tolist()) == [-1.0, 1.0]  # reward − cohort mean, no std
    with torch.no_grad():
        lp = token_logprobs(model, mb.input_ids, mb.loss_mask)
    ratio = torch.exp(lp - mb.behaviour_logprobs)[mb.loss_mask]
    assert ratio.numel() == mb.num_tokens > 0
    # recorded by the engine, recomputed by the trainer's forward: equal up to float32
    torch.testing.assert_close(ratio, torch.ones_like(ratio), atol=1e-4, rtol=0)


def record(
    store: TraceStore, sid: str, *, task: str, version: int, temperature: float = 1.0, **fb: Any
) -> None:
    gen = (10, 11, 12)
    writes: list[Any] = [
        NewSession(sid, task_id=task, checkpoint=f"ckpt-v{version}"),
        RequestRecord(
            id=f"{sid}-r",
            response_id=f"{sid}-r",
            session_id=sid,
            endpoint="completions",
            model="tiny",
            prompt_ids=(1, 2),
            generated_ids=gen,
            logprobs=(-0.5,) * 3,
            versions=(version,) * 3,
            finish_reason="stop",
            temperature=temperature,
            top_p=1.0,
        ),
    ]
    if fb:
        writes.append(FeedbackRecord(sid, fb["signal"], fb.get("value")))
    for w in writes:
        store.writer.submit(w).result()


def test_silent_off_distribution_and_stale_sessions_are_left_out_and_counted(
    store: TraceStore,
) -> None:
    _, tok = tiny_model(seed=0)
    record(store, "a", task="t1", version=3, signal="accept")
    record(store, "b", task="t1", version=3, signal="reject")
    record(store, "silent", task="t1", version=3, signal="silent")
    record(store, "greedy", task="t1", version=3, temperature=0.0, signal="accept")
    record(store, "hot", task="t1", version=3, temperature=0.7, signal="accept")
    record(store, "old", task="t1", version=1, signal="accept")  # 3 − 1 > max_staleness 1
    sessions, rewards = rewarded(store, tok)
    groups, counts = cohort_groups(sessions, rewards, trainer_version=3, cfg=RowsConfig())
    assert (counts.sessions, counts.trained) == (6, 2)
    assert (counts.unlabeled, counts.off_distribution, counts.stale) == (1, 2, 1)
    assert sorted(t.task_id for g in groups for t in g) == ["t1", "t1"]


def test_advantages_are_centred_per_cohort_as_configured(store: TraceStore) -> None:
    _, tok = tiny_model(seed=0)
    # task t1: accept, reject (mean 0); task t2: accept, keep 0.5 (rewards 1, 0: mean 0.5)
    record(store, "a", task="t1", version=0, signal="accept")
    record(store, "b", task="t1", version=0, signal="reject")
    record(store, "c", task="t2", version=0, signal="accept")
    record(store, "d", task="t2", version=0, signal="keep", value=0.5)
    sessions, rewards = rewarded(store, tok)
    by_task = RowsConfig(cohort="task")
    groups, counts = cohort_groups(sessions, rewards, trainer_version=0, cfg=by_task)
    assert counts.cohorts == 2
    batch = production_batch(groups, trainer_version=0, cfg=by_task, train=TrainConfig())
    advs = sorted(a for mb in batch.microbatches for a in mb.advantages.tolist())
    assert advs == [-1.0, -0.5, 0.5, 1.0]
    # one cohort (all sessions were served by checkpoints "ckpt-v0"): mean 0.25
    groups, _ = cohort_groups(sessions, rewards, trainer_version=0, cfg=RowsConfig())
    batch = production_batch(groups, trainer_version=0, cfg=RowsConfig(), train=TrainConfig())
    advs = sorted(a for mb in batch.microbatches for a in mb.advantages.tolist())
    assert advs == pytest.approx([-1.25, -0.25, 0.75, 0.75], abs=1e-6)
    # no length normalisation: one batch-wide denominator, the count of generated tokens
    assert batch.token_budget == 4 * 3


def test_the_turns_of_one_agent_session_are_one_segment_with_tool_output_masked(
    store: TraceStore,
) -> None:
    _, tok = tiny_model(seed=0)
    turn = {"endpoint": "completions", "model": "tiny", "finish_reason": "stop",
            "temperature": 1.0, "top_p": 1.0, "session_id": "s"}  # fmt: skip
    store.writer.submit(NewSession("s")).result()
    store.writer.submit(RequestRecord(id="r1", response_id="r1", prompt_ids=(1, 2),
        generated_ids=(3, 4), logprobs=(-1.0, -2.0), versions=(0, 0), **turn)).result()  # fmt: skip
    # turn 2 extends turn 1's ids with a tool result (7, 8), then generates 9
    store.writer.submit(RequestRecord(id="r2", response_id="r2", prompt_ids=(1, 2, 3, 4, 7, 8),
        generated_ids=(9,), logprobs=(-3.0,), versions=(1,), **turn)).result()  # fmt: skip
    (s,) = read_sessions(store.engine, tok, SCHEMAS)
    (seg,) = s.trajectory.segments
    assert seg.token_ids == (1, 2, 3, 4, 7, 8, 9)
    assert seg.loss_mask == (False, False, True, True, False, False, True)
    assert seg.logprobs == (0.0, 0.0, -1.0, -2.0, 0.0, 0.0, -3.0)
    assert s.min_version == 0
