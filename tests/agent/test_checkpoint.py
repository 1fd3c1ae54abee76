"""Episode checkpoints: a continuation from any turn reproduces the original token for
token (scripted policy, a self-summarised chain, greedy decoding of a trained tiny model),
and each checkpoint's sandbox is the workspace as it was at that turn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import shadowrl
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.loop import run_episode
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.state import Checkpoints, EpisodeCheckpoint
from shadowrl.agent.summary import SummarisingScript
from shadowrl.agent.tools import ToolSet
from shadowrl.replay.record import RecordedOutputs
from shadowrl.sandbox import create_sandbox
from shadowrl.types import Policy, Trajectory

CFG = AgentConfig()
DEMO_REPO = Path(shadowrl.__file__).parent / "data" / "demo" / "repo"


class Recording:
    """A deterministic policy of the prompt: `reply(prompt)`, remembered for the replay."""

    def __init__(self, reply: Callable[[str], str]):
        self.reply, self.seen = reply, dict[str, str]()

    def __call__(self, prompt: str) -> str:
        self.seen[prompt] = self.reply(prompt)
        return self.seen[prompt]


def play(
    policy: Policy, sandbox: Any, tokenizer: Any, config: AgentConfig, **kw: Any
) -> Trajectory:
    return asyncio.run(
        run_episode(policy, sandbox, "Fix it.", tokenizer=tokenizer, config=config, **kw)
    )


def continue_from(
    cp: EpisodeCheckpoint, policy: Policy, original: Trajectory, tokenizer: Any, config: AgentConfig
) -> Trajectory:
    tools = RecordedOutputs(ToolSet.from_names(config.tools), original.steps)
    sandbox = cp.fork()
    try:
        return play(policy, sandbox, tokenizer, config, tools=tools, start=cp)
    finally:
        sandbox.close()


def assert_same_episode(a: Trajectory, b: Trajectory, logprob_tol: float = 0.0) -> None:
    assert (a.end, a.messages, a.steps, a.tool_errors) == (
        b.end,
        b.messages,
        b.steps,
        b.tool_errors,
    )
    assert len(a.segments) == len(b.segments)
    for x, y in zip(a.segments, b.segments, strict=True):
        assert (x.token_ids, x.loss_mask, x.versions) == (y.token_ids, y.loss_mask, y.versions)
        assert x.logprobs == pytest.approx(y.logprobs, abs=logprob_tol)
    assert {k: v for k, v in a.info.items()} == {k: v for k, v in b.info.items()}


def test_every_turn_continues_token_for_token(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str]
) -> None:
    replies = iter(demo_replies)
    script = Recording(lambda prompt: next(replies))
    cps = Checkpoints(when=lambda steps: True)
    original = play(
        ScriptedPolicy(tokenizer, script), demo_sandbox, tokenizer, CFG, checkpoints=cps
    )
    assert original.end == "submitted" and [c.turns for c in cps.taken] == [1, 2, 3]
    try:
        for cp in cps.taken:
            again = ScriptedPolicy(tokenizer, lambda prompt: script.seen[prompt])  # KeyError if off
            assert_same_episode(continue_from(cp, again, original, tokenizer, CFG), original)
            assert again.calls == 4 - cp.turns
        # the sandbox is the workspace at that turn: turn 1 is before the edit, turn 2 after
        before, after = (cp.fork() for cp in cps.taken[:2])
        assert b"sorted" not in before.read_file("stats.py")
        assert b"sorted" in after.read_file("stats.py")
        before.close()
        after.close()
        # the frozen tokens end with the next turn's generation prompt
        assert cps.taken[0].state.tokens.ids == list(
            original.segments[0].token_ids[: len(cps.taken[0].state.tokens.ids)]
        )
    finally:
        for cp in cps.taken:
            cp.release()


def test_budgets_continue_from_the_checkpoint(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str]
) -> None:
    """Turns used before the checkpoint count: a max_turns=3 continuation from turn 2
    makes one call, as the original would have."""
    config = CFG.model_copy(update={"max_turns": 3})
    cps = Checkpoints(when=lambda steps: len(steps) == 2)
    original = play(
        ScriptedPolicy(tokenizer, demo_replies), demo_sandbox, tokenizer, config, checkpoints=cps
    )
    (cp,) = cps.taken
    again = ScriptedPolicy(tokenizer, demo_replies[2:])
    cont = continue_from(cp, again, original, tokenizer, config)
    cp.release()
    assert original.end == cont.end == "max_turns" and again.calls == 1
    assert_same_episode(cont, original)


def test_a_self_summarised_chain_continues_from_its_second_segment(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str]
) -> None:
    tools = (*CFG.tools, "summarize")
    s = {"enabled": True, "trigger_tokens": 1300, "max_tokens": 64, "carried_result_tokens": 32}
    config = AgentConfig.model_validate(
        {"max_new_tokens": 128, "max_turns": 12, "tools": tools,
         "summary": {**s, "prompt_reserve_tokens": 700}}
    )  # fmt: skip
    script = Recording(SummarisingScript(demo_replies, "median() does not sort. Sort a copy."))
    cps = Checkpoints(when=lambda steps: True)
    original = play(
        ScriptedPolicy(tokenizer, script), demo_sandbox, tokenizer, config, checkpoints=cps
    )
    assert original.end == "submitted" and len(original.segments) == 2
    late = [cp for cp in cps.taken if len(cp.state.chain.done) == 1]
    assert late, "no checkpoint after the summary"
    try:
        for cp in (cps.taken[0], late[0]):
            again = ScriptedPolicy(tokenizer, lambda prompt: script.seen[prompt])
            assert_same_episode(continue_from(cp, again, original, tokenizer, config), original)
    finally:
        for cp in cps.taken:
            cp.release()


def fit(model: Any, ids: tuple[int, ...], steps: int = 12) -> Any:
    """A few steps of next-token training on one episode: a random tiny model's near-flat
    logits let greedy picks flip between a full prefill and incremental decoding."""
    import torch

    x = torch.tensor([ids])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    with torch.random.fork_rng(devices=[]):
        for _ in range(steps):
            loss = model(input_ids=x, labels=x).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


def test_greedy_decoding_of_a_trained_tiny_model_continues_token_for_token(
    demo_sandbox: Any, tokenizer: Any, demo_replies: list[str]
) -> None:
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import tiny_model

    expert = play(ScriptedPolicy(tokenizer, demo_replies), demo_sandbox, tokenizer, CFG)
    model, tok = tiny_model(seed=0)
    fit(model, expert.segments[0].token_ids[:512])
    config = CFG.model_copy(update={"max_turns": 4, "max_new_tokens": 48, "temperature": 0.0})
    cps = Checkpoints(when=lambda steps: True)
    with (
        closing(create_sandbox(DEMO_REPO, backend="local")) as sandbox,
        Engine(model, tok, EngineConfig()) as engine,
    ):
        original = play(engine, sandbox, tok, config, checkpoints=cps)
        assert original.num_generated > 4 * 8 and len(cps.taken) >= 2
        try:
            for cp in cps.taken:
                # float32 logprobs of a prefill vs incremental decoding differ in the last bits
                cont = continue_from(cp, engine, original, tok, config)
                assert_same_episode(cont, original, logprob_tol=1e-3)
        finally:
            for cp in cps.taken:
                cp.release()
