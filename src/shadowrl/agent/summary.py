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
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Iterable, Sequence
from typing import Any, Literal

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
