"""Training on self-summarised chains the harness really produced: every segment gets its
chain's advantage, summary tokens are trained, staleness is per chain, and (the positive
control) the chain reward raises a faithful summary's probability over a lossy one's."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import shadowrl
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.loop import run_episode
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.prompt import format_tool_calls
from shadowrl.agent.summary import SUMMARY_REQUEST, summary_metrics
from shadowrl.models import load_tokenizer, random_llama
from shadowrl.rl.batch import build_rl_batch
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.forward import token_logprobs
from shadowrl.rl.trainer import Trainer
from shadowrl.sandbox import create_sandbox
from shadowrl.types import Generation, SamplingParams, ToolCall, Trajectory

DEMO = Path(shadowrl.__file__).parent / "data" / "demo" / "repo"
TEST_CMD = "python3 -m unittest -q test_stats"
FAITHFUL = "stats.py: median() must sort first: add `values = sorted(values)`."
# Lost the one fact that matters (sorting); one token apart, so a random model starts near 50/50.
LOSSY = "stats.py: median() must copy first: add `values = list(values)`."
CONFIG = AgentConfig.model_validate(
    {
        "max_turns": 10,
        "tools": ("read_file", "edit_file", "run", "submit", "summarize"),
        "summary": {"enabled": True, "trigger_tokens": 3000},
    }
)


def call(name: str, **args: Any) -> str:
    return format_tool_calls("", [ToolCall("c", name, args)])


def script(prompt: str) -> str:
    """The model side: read, summarise, then apply the fix its summary names, submit."""
    if "# Your summary" not in prompt:
        return (
            call("summarize") if "<tool_response>" in prompt else call("read_file", path="stats.py")
        )
    after = prompt.split("# Your summary")[-1]
    if "<tool_response>" in after:
        return call("submit")
    fix = next(line for line in (FAITHFUL, LOSSY) if line in after).split("`")[1]
    old, new = "    n = len(values)\n", f"    {fix}\n    n = len(values)\n"
    return call("edit_file", path="stats.py", old=old, new=new)


class Chooser:
    """A tiny model's policy between two summaries (sampled by their sequence likelihood),
    scripted elsewhere; every token's logprob is the model's own, so IS ratios are exact."""

    def __init__(self, model: Any, tokenizer: Any, rng: random.Random, version: int = 0):
        self.model, self.tokenizer, self.rng, self.version = model, tokenizer, rng, version

    def encode(self, text: str, sampling: SamplingParams) -> list[int]:
        return [*self.tokenizer.encode(text, add_special_tokens=False), sampling.stop_token_ids[0]]

    def logprobs(self, prompt: list[int], reply: list[int]) -> list[float]:
        ids = torch.tensor([prompt + reply])
        mask = torch.zeros_like(ids, dtype=torch.bool)
        mask[0, len(prompt) :] = True
        with torch.no_grad():
            return token_logprobs(self.model, ids, mask)[0, len(prompt) :].tolist()

    def p_faithful(self, prompt: list[int], sampling: SamplingParams) -> float:
        f, lossy = (sum(self.logprobs(prompt, self.encode(t, sampling))) for t in (FAITHFUL, LOSSY))
        return 1 / (1 + math.exp(lossy - f))

    async def generate(self, prompt_ids: Any, sampling: SamplingParams) -> Generation:
        prompt = list(prompt_ids)
        text = self.tokenizer.decode(prompt)
        if text.rstrip().endswith(f"{SUMMARY_REQUEST}<|im_end|>\n<|im_start|>assistant"):
            self.summary_prompt = prompt
            reply = FAITHFUL if self.rng.random() < self.p_faithful(prompt, sampling) else LOSSY
        else:
            reply = script(text)
        ids = self.encode(reply, sampling)
        lps = self.logprobs(prompt, ids)
        return Generation(tuple(ids), tuple(lps), (self.version,) * len(ids))


def graded(policy: Any, tokenizer: Any) -> Trajectory:
    """One episode on the demo repo, rewarded by its real tests."""
    sandbox = create_sandbox(DEMO, backend="local")
    try:
        traj = asyncio.run(
            run_episode(policy, sandbox, "Fix it.", tokenizer=tokenizer, config=CONFIG)
        )
        reward = float(sandbox.exec(TEST_CMD).exit_code == 0)
    finally:
        sandbox.close()
    return dataclasses.replace(traj, reward=reward)


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_tokenizer("smollm2")


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """Tiny forwards are 8x faster on one thread than on a contended pool."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_harness_chains_train_every_segment_with_the_chain_advantage(tokenizer: Any) -> None:
    model = random_llama(0)
    group = [graded(Chooser(model, tokenizer, random.Random(s)), tokenizer) for s in range(4)]
    chosen = [t.info["summary_texts"] for t in group]
    assert {FAITHFUL, LOSSY} == {c for (c,) in chosen} and all(len(t.segments) == 2 for t in group)
    assert [t.reward for t in group] == [float(c == [FAITHFUL]) for c in chosen]
    batch = build_rl_batch([group], trainer_version=0, max_staleness=0, microbatch_tokens=1 << 16)
    mean = sum(t.reward or 0.0 for t in group) / len(group)
    rows = {
        tuple(mb.input_ids[i, : int(mb.loss_mask[i].nonzero().max()) + 1].tolist()): (
            float(mb.advantages[i]),
            mb.loss_mask[i],
        )
        for mb in batch.microbatches
        for i in range(len(mb.advantages))
    }
    for traj in group:
        for seg in traj.segments:  # each harness segment is a row, token for token
            last = max(i for i, m in enumerate(seg.loss_mask) if m)
            adv, mask = rows[seg.token_ids[: last + 1]]
            assert adv == pytest.approx((traj.reward or 0.0) - mean, abs=1e-6)
            assert mask[: last + 1].tolist() == [False, *seg.loss_mask[1 : last + 1]]
    # The summary's tokens are trained (in the loss mask of the first segment's row).
    first = group[0].segments[0]
    summary_ids = tokenizer.encode(group[0].info["summary_texts"][0], add_special_tokens=False)
    gen = [t for t, m in zip(first.token_ids, first.loss_mask, strict=True) if m]
    assert gen[-len(summary_ids) - 1 : -1] == summary_ids
    assert batch.stats["stale_chains"] == 0 and batch.stats["segments"] == 8


def test_summary_metrics_of_harness_chains(tokenizer: Any) -> None:
    model = random_llama(0)
    no_summary = AgentConfig.model_validate({"tools": ("read_file", "edit_file", "submit")})
    sandbox = create_sandbox(DEMO, backend="local")
    try:
        replies = ScriptedPolicy(tokenizer, [call("submit")])
        plain = asyncio.run(
            run_episode(replies, sandbox, "Fix it.", tokenizer=tokenizer, config=no_summary)
        )
    finally:
        sandbox.close()
    chains = [graded(Chooser(model, tokenizer, random.Random(s)), tokenizer) for s in range(3)]
    group = [*chains, dataclasses.replace(plain, reward=0.0)]
    m = summary_metrics(group)
    assert m["summaries_per_episode"] == 3 / 4
    assert m["summary_tokens"] == sum(t.steps[1].num_generated for t in chains)
    assert m["degenerate_summary_rate"] == 0.0  # both summaries name stats.py
    assert m["reward_summarised"] == sum(t.reward or 0.0 for t in chains) / 3
    assert m["reward_not_summarised"] == 0.0


def test_stale_head_drops_the_whole_harness_chain(tokenizer: Any) -> None:
    model = random_llama(0)
    group = [
        graded(Chooser(model, tokenizer, random.Random(s), version=3), tokenizer) for s in (0, 1)
    ]
    head, tail = group[0].segments  # as if its summary segment was sampled at version 0
    head = dataclasses.replace(head, versions=tuple(min(v, 0) for v in head.versions))
    old = dataclasses.replace(group[0], segments=(head, tail))
    batch = build_rl_batch(
        [[old, group[1]]], trainer_version=3, max_staleness=2, microbatch_tokens=1 << 16
    )
    assert batch.stats["stale_chains"] == 1 and batch.stats["stale_segments"] == 2


def test_positive_control_chain_reward_raises_the_faithful_summary(tokenizer: Any) -> None:
    """A policy choosing between a faithful and a lossy summary: only the faithful one lets
    the next segment fix the bug, so the outcome reward alone must teach it to choose it."""
    trainer = Trainer(
        random_llama(0),
        TrainConfig.model_validate(
            {"optimizer": {"lr": 3e-3, "grad_clip": 1.0}, "batch": {"microbatch_tokens": 1 << 16}}
        ),
    )
    rng = random.Random(0)
    probe = Chooser(trainer.model, tokenizer, rng)
    graded(probe, tokenizer)
    stop = SamplingParams(stop_token_ids=(tokenizer.convert_tokens_to_ids("<|im_end|>"),))
    before = probe.p_faithful(probe.summary_prompt, stop)
    assert 0.2 < before < 0.8  # near chance: the choice is the policy's, not a given
    for _ in range(4):
        policy = Chooser(trainer.model, tokenizer, rng, version=trainer.version)
        group = [graded(policy, tokenizer) for _ in range(6)]
        metrics = trainer.train_groups([group])
        assert metrics["skipped"] == 0.0 or len({t.reward for t in group}) == 1
    after = probe.p_faithful(probe.summary_prompt, stop)
    assert after > before + 0.2, (before, after)
