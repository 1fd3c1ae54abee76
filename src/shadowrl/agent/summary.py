"""Self-summarisation: what the model is asked, what the next segment starts from, and
which summaries are degenerate.

An episode that outgrows its context becomes a chain of segments. At the trigger the
loop appends `SUMMARY_REQUEST` to the *current* context (so the engine's prefix cache
reuses the KV of everything before it) and the model's reply is the summary. The next
segment is a fresh conversation: the system prompt, then one user turn holding the
task, the summary and the most recent tool result (truncated). Every segment is
trained with the chain's reward, so a summary that lost what mattered is punished.

The degeneracy checks are pure functions so the loop, the metrics and the benchmark
agree on what a bad summary is (CompactionRL: masked-out summaries degenerate into
exactly these shapes).

`Summariser` is the loop's `Compaction` when `agent.summary.enabled`: the loop calls it
after every work turn and never imports this module otherwise.
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from shadowrl.agent.compaction import RunningEpisode, TurnEnd, Verdict
from shadowrl.agent.config import SUMMARY_REQUEST_TOKENS, AgentConfig
from shadowrl.agent.parsing import parse_tool_calls
from shadowrl.types import Message, Step, ToolResult, Trajectory

SUMMARY_REQUEST = (
    "Your context is almost full. Summarise the work so far for yourself: the files and "
    "functions that matter, what you found, what you changed, what is left to do. Reply "
    "with the summary only; it will replace the history."
)
SUMMARY_HEADER = "\n\n# Your summary of the work so far\n"
RESULT_HEADER = "\n\n# The last tool result\n"


def asks_for_summary(prompt: str) -> bool:
    """Whether a decoded prompt ends with the summary request (only template tokens after)."""
    _, found, tail = prompt.rpartition(SUMMARY_REQUEST)
    return bool(found) and len(tail) < 64 and "<tool_response>" not in tail


Degeneracy = Literal["empty", "copy", "over_budget", "no_files"]
DEGENERACIES: tuple[Degeneracy, ...] = ("empty", "copy", "over_budget", "no_files")


def next_segment_messages(system: str, task: str, summary: str, carried: str) -> list[Message]:
    """The conversation a new segment starts from."""
    body = task + SUMMARY_HEADER + summary.strip()
    if carried:
        body += RESULT_HEADER + carried
    return [Message("system", system), Message("user", body)]


def carried_result(results: Sequence[ToolResult], tokenizer: Any, max_tokens: int) -> str:
    """The most recent tool results, cut to `max_tokens` tokens (head kept)."""
    text = "\n".join(f"[{r.name}] {r.output}" for r in results)
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) <= max_tokens:
        return text
    return tokenizer.decode(ids[:max_tokens]) + "\n[... truncated]"


def touched_files(steps: Iterable[Step]) -> set[str]:
    """Paths the episode's tool calls named (read, edited, written, listed)."""
    return {
        str(c.arguments["path"])
        for s in steps
        for c in s.tool_calls
        if isinstance(c.arguments.get("path"), str) and c.arguments["path"]
    }


def degeneracy(
    summary: str, *, prompt: str, over_budget: bool, files: set[str]
) -> Degeneracy | None:
    """Why `summary` is useless, or None if it is not (first reason in `DEGENERACIES`).

    `prompt` is the text the summary must not merely repeat (the task and the request);
    `files` the paths touched so far, of which a useful summary names at least one.
    """
    text = summary.strip()
    if not text:
        return "empty"
    if text in prompt or _similar(text, prompt):
        return "copy"
    if over_budget:
        return "over_budget"
    if files and not any(f in text or posixpath.basename(f) in text for f in files):
        return "no_files"
    return None


def _similar(text: str, prompt: str) -> bool:
    """Most of the summary is a verbatim run of the prompt."""
    match = difflib.SequenceMatcher(None, text, prompt, autojunk=False)
    block = match.find_longest_match(0, len(text), 0, len(prompt))
    return block.size >= 0.8 * len(text)


def summary_info(summaries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The trajectory's summary counters (metrics and the benchmark read these)."""
    bad = [d for x in summaries if (d := x["degenerate"]) is not None]
    return {
        "summaries": len(summaries),
        "summary_tokens": sum(int(x["tokens"]) for x in summaries),
        "degenerate_summaries": len(bad),
        "degenerate_kinds": {k: bad.count(k) for k in DEGENERACIES if k in bad},
        "summary_texts": [str(x["text"]) for x in summaries],
    }


def summary_metrics(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Per-step summary metrics: how often, how long, how often useless, and whether the
    episodes that summarised did better (NaN when no episode of that side exists)."""
    n = [int(t.info.get("summaries", 0)) for t in trajectories]
    bad = sum(int(t.info.get("degenerate_summaries", 0)) for t in trajectories)

    def mean_reward(summarised: bool) -> float:
        rs = [
            t.reward or 0.0 for t, k in zip(trajectories, n, strict=True) if (k > 0) == summarised
        ]
        return sum(rs) / len(rs) if rs else float("nan")

    return {
        "summaries_per_episode": sum(n) / max(len(n), 1),
        "summary_tokens": float(sum(int(t.info.get("summary_tokens", 0)) for t in trajectories)),
        "degenerate_summary_rate": bad / sum(n) if sum(n) else 0.0,
        "reward_summarised": mean_reward(True),
        "reward_not_summarised": mean_reward(False),
    }


class Summariser:
    """Self-summarisation as the loop's `Compaction` (built once from `agent.summary`)."""

    def __init__(self, config: AgentConfig):
        self.config, self.summary = config, config.summary

    async def after_turn(self, episode: RunningEpisode, turn: TurnEnd) -> Verdict:
        if kept := [r for r in turn.results if r.name != "summarize"]:
            episode.last_results = kept
        if not self._wanted(episode, turn.more):
            return None
        return await self._summarise(episode, turn)

    def info(self, episode: RunningEpisode) -> dict[str, Any]:
        return summary_info(episode.summaries)

    def _wanted(self, episode: RunningEpisode, more: int) -> bool:
        """The model called `summarize`, or the next context would pass the trigger, or
        one more full-length reply would leave no room for the request and a summary."""
        cfg, s = self.config, self.summary
        requested, episode.ctx.summary_requested = episode.ctx.summary_requested, False
        after = len(episode.tokens.ids) + more
        last_chance = after + cfg.max_new_tokens + SUMMARY_REQUEST_TOKENS + s.max_tokens
        return requested or after >= s.trigger_tokens or last_chance > cfg.max_context_tokens

    async def _summarise(self, episode: RunningEpisode, turn: TurnEnd) -> Verdict:
        """Ask for a summary in the current context, then start the next segment from it."""
        cfg, s, ep = self.config, self.summary, episode
        if ep.turns >= cfg.max_turns:
            return "max_turns"
        request = Message("user", SUMMARY_REQUEST)
        ids = ep.renderer.continuation_ids(turn.conv, [*turn.feedback, request], turn.generated)
        if len(ep.tokens.ids) + len(ids) + s.max_tokens > cfg.max_context_tokens:
            # the results do not fit; they are carried over instead
            ids = ep.renderer.continuation_ids(turn.conv, [request], turn.generated)
        if len(ep.tokens.ids) + len(ids) >= cfg.max_context_tokens:
            return "context_full"
        if cfg.max_episode_tokens <= ep.generated():
            return "max_tokens"
        ep.tokens.add_context(ids)
        gen = await ep.generate(s.max_tokens)
        if gen.finish_reason == "abort":
            return "error"
        text = ep.tokenizer.decode(gen.token_ids, skip_special_tokens=True)
        summary = parse_tool_calls(text, ep.schemas).content  # calls in a summary are ignored
        ep.record(Step(text, (), (), (), len(gen.token_ids), gen.entropies))
        bad = degeneracy(
            summary, prompt=ep.task + "\n" + SUMMARY_REQUEST,
            over_budget=gen.finish_reason == "length", files=touched_files(ep.steps),
        )  # fmt: skip
        ep.summaries.append({"tokens": len(gen.token_ids), "degenerate": bad, "text": summary})
        # The log keeps the results even when only the request fit (they were carried).
        ep.history += [*turn.conv, *turn.feedback, request, Message("assistant", summary)]
        carried = carried_result(ep.last_results, ep.tokenizer, s.carried_result_tokens)
        ep.start_segment(next_segment_messages(cfg.system_prompt, ep.task, summary, carried))
        return "new_segment"


class SummarisingScript:
    """Fixed replies in order, and `summary` whenever the loop asks for one (a callable
    for `ScriptedPolicy`: the summary point depends on the context, not on the script)."""

    def __init__(self, replies: Sequence[str], summary: str):
        self.replies, self.summary, self.next = list(replies), summary, 0

    def __call__(self, prompt: str) -> str:
        if asks_for_summary(prompt):
            return self.summary
        if self.next >= len(self.replies):
            raise RuntimeError(f"ScriptedPolicy ran out of replies after {len(self.replies)}")
        self.next += 1
        return self.replies[self.next - 1]
