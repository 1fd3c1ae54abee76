"""Pass@1 and tokens per compaction arm from real episodes, for `compaction.py` (issue 21).

The acting policy is the same in every arm (`--model`, sampled as the config says), so
the arms differ only in how its context is compacted once it outgrows the tier's budget
(`agent.max_context_tokens`, 2,048 tokens on `long`):

  full        nothing is compacted: summary off, the context may grow to FULL_CONTEXT;
  truncation  the loop keeps the whole context as in `full`, but the model reads only the
              system prompt, the task and the most recent whole messages that fit the
              budget beside its reply (cut where a message starts);
  prompted    the loop's summary trigger at the budget; `--model` writes the summary;
  learned     the same trigger; the `--learned` checkpoint writes the summary (every
              other turn is still `--model`'s).

`full` and `truncation` drop the `summarize` tool (there is no summary to ask for).
Episodes go through eval's runner (real sandboxes, the task's verifier), so pass@1 has
eval's Wilson interval on the design-effect-adjusted count. Tokens are counted where
the model is called: the context tokens it read, summed over the episode's calls (the
compute an arm pays), the tokens it generated, and the summary tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any

FULL_CONTEXT = 6144  # the `full` arm's context: three times the tier's budget
ARMS = ("full", "truncation", "prompted", "learned")
EPISODE_TIMEOUT_S = 3600.0  # above the config's: the full arm reads up to 3x its context
TAIL = 96  # decoded tokens enough to see the summary request at the end of a prompt


def truncated_view(ids: list[int], start_id: int, room: int) -> list[int]:
    """System + task + the most recent whole messages that fit in `room` tokens (messages
    start at `start_id`); the last message's tail if even it alone does not fit."""
    if len(ids) <= room:
        return ids
    starts = [i for i, t in enumerate(ids) if t == start_id]
    head = ids[: starts[2]] if len(starts) > 2 else []
    for s in starts[3:]:
        if len(head) + len(ids) - s <= room:
            return head + ids[s:]
    keep = max(room - len(head), 1)
    return head + ids[-keep:]


class Compacting:
    """One episode's policy: routes summary requests to the summariser, shows the actor a
    truncated view when `budget` is set, and counts the tokens read and written."""

    def __init__(self, actor: Any, tokenizer: Any, summariser: Any = None, budget: int = 0):
        self.actor, self.summariser, self.tokenizer, self.budget = (
            actor, summariser, tokenizer, budget,
        )  # fmt: skip
        self.start_id = int(tokenizer.convert_tokens_to_ids("<|im_start|>"))
        self.read = self.generated = self.summary_tokens = self.summaries = 0

    async def generate(self, prompt_ids: Any, sampling: Any) -> Any:
        from shadowrl.agent.summary import asks_for_summary

        ids, engine = list(prompt_ids), self.actor
        summary = self.summariser is not None and asks_for_summary(
            self.tokenizer.decode(ids[-TAIL:])
        )
        if summary:
            engine = self.summariser
        elif self.budget:
            ids = truncated_view(ids, self.start_id, self.budget - sampling.max_new_tokens)
        gen = await engine.generate(ids, sampling)
        self.read, self.generated = self.read + len(ids), self.generated + len(gen.token_ids)
        if summary:
            self.summaries += 1
            self.summary_tokens += len(gen.token_ids)
        return gen


@dataclass
class ArmPolicies:
    """A `PolicyFactory`: a fresh counting `Compacting` per episode, all of them kept."""

    actor: Any
    tokenizer: Any
    description: str
    summariser: Any = None
    budget: int = 0
    made: list[Compacting] = field(default_factory=list)

    def __call__(self, task: Any, prepared: Any) -> Compacting:
        self.made.append(Compacting(self.actor, self.tokenizer, self.summariser, self.budget))
        return self.made[-1]


def arm_spec(spec: Any, arm: str) -> Any:
    """The episode spec of an arm: the config's for the summary arms; no summary and a
    `FULL_CONTEXT` window for `full` and `truncation`. Every arm gets `EPISODE_TIMEOUT_S`:
    a wall-clock cut would score the box's load, not the compaction."""
    from shadowrl.agent.config import AgentConfig

    tree = spec.agent.model_dump()
    tree["episode_timeout_s"] = EPISODE_TIMEOUT_S
    if arm in ("full", "truncation"):
        tree["max_context_tokens"] = FULL_CONTEXT
        tree["tools"] = [t for t in tree["tools"] if t != "summarize"]
        tree["summary"]["enabled"] = False
    return dataclasses.replace(spec, agent=AgentConfig.model_validate(tree))


async def run_arms(
    tasks: list[Any],
    actor: Any,
    learned: Any,
    tokenizer: Any,
    spec: Any,
    *,
    samples: int,
    cache_dir: Any,
    pins: Any,
    interval: Any,
    seed: int = 0,
) -> dict[str, Any]:
    """Every arm's episodes (the learned arm only with a `learned` model) -> its pass@1,
    interval and tokens per episode (mean and interval from `interval`).

    The arms run at once on one actor engine, so its decode steps batch every arm's
    episodes (on a CPU a batch of 12 costs little more than one)."""
    from shadowrl.eval.config import EvalConfig
    from shadowrl.eval.runner import evaluate
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine

    arms = [a for a in ARMS if a != "learned" or learned is not None]
    per_arm = len(tasks) * samples
    cfg = EngineConfig(max_batch=per_arm * len(arms), max_seq_len=FULL_CONTEXT + 256)
    settings = EvalConfig(samples=samples, concurrency=per_arm)
    budget = spec.agent.max_context_tokens
    with contextlib.ExitStack() as stack:
        a = stack.enter_context(Engine(actor, tokenizer, cfg, seed=seed))
        writers = {"prompted": a}
        if learned is not None:
            writers["learned"] = stack.enter_context(Engine(learned, tokenizer, cfg, seed=seed))
        factories = {
            arm: ArmPolicies(
                a,
                tokenizer,
                f"compaction:{arm}",
                summariser=writers.get(arm),
                budget=budget if arm == "truncation" else 0,
            )
            for arm in arms
        }
        runs = [
            evaluate(
                tasks,
                factories[arm],
                arm_spec(spec, arm),
                settings=settings,
                cache_dir=cache_dir,
                config_pins=pins,
                seed=seed,
                suite="long:heldout",
            )
            for arm in arms
        ]
        results = await asyncio.gather(*runs)
    return {
        arm: arm_row(r, factories[arm].made, interval) for arm, r in zip(arms, results, strict=True)
    }


def arm_row(result: Any, made: list[Compacting], interval: Any) -> dict[str, Any]:
    """pass@1 [value, low, high], resolved/episodes and tokens per episode of one arm."""
    p, n = result.overall.pass1, result.overall
    per = {
        "read_tokens": [float(c.read) for c in made],
        "generated_tokens": [float(c.generated) for c in made],
        "summary_tokens": [float(c.summary_tokens) for c in made],
        "summaries": [float(c.summaries) for c in made],
    }
    resolved = sum(s.resolved for t in result.tasks for s in t.samples)
    return {
        "pass1": [p.value, p.low, p.high],
        "resolved": resolved,
        "episodes": n.episodes,
        "crashed": n.errors,
        "ends": [s.end for t in result.tasks for s in t.samples],
        **{k: interval(v) for k, v in per.items()},
    }
