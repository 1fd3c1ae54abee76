"""The words of a run report: what was trained on what, what each eval measured, what
its numbers allow, and where to go next.

A newcomer's first run ends on "held-out pass@1 0.000 -> 0.000", which says nothing
on its own: zero resolved in 8 tasks × 2 samples is compatible with a true pass rate
near a third. These functions turn the run's own records (metrics rows, eval results,
its config sections) into the sentences that say so. All pure: data in, Markdown
lines out; `report.py` reads the run directory and writes the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from shadowrl.eval import EvalResult, stats
from shadowrl.eval.config import EvalConfig
from shadowrl.eval.gate import PinMismatch, gate
from shadowrl.eval.stats import Estimate
from shadowrl.markdown import table
from shadowrl.pipeline.config import PipelineConfig
from shadowrl.rl.config import TrainConfig

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Settings:
    """The config sections a report explains, from run_dir/config.yaml (None: unreadable)."""

    pipeline: PipelineConfig | None
    train: TrainConfig | None
    eval: EvalConfig


def rl_step(stage: str) -> int | None:
    """The RL step an eval stage was taken after (`rl_step6` -> 6), else None."""
    m = re.fullmatch(r"rl_step(\d+)", stage)
    return int(m[1]) if m else None


def resolved(r: EvalResult) -> int:
    return sum(t.counts[1] for t in r.tasks)


def percent(x: float) -> str:
    return f"~{x:.0%}"


def count(n: int, word: str) -> str:
    """`n word`, plural unless n is 1."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def size(r: EvalResult) -> str:
    return f"{count(r.overall.tasks, 'task')} × {count(r.samples, 'sample')}"


# ---------------------------------------------------------------- what was trained on what


def sft_line(rows: Sequence[Row], data: Row | None, pipeline: PipelineConfig | None) -> str:
    """One bullet on the SFT stage, from its `sft` metrics rows and `sft_data` record."""
    if pipeline is not None and not pipeline.sft:
        return "- **SFT**: off (`pipeline.sft: false`): RL starts from the model as loaded."
    source = _demo_source(data, pipeline)
    if not rows:
        return (
            f"- **SFT**: no `sft` rows in metrics.jsonl (its checkpoint was copied in); {source}."
        )
    epochs = int(max(r.get("epoch", 0) for r in rows)) + 1
    return (
        f"- **SFT** (supervised fine-tuning): {len(rows)} optimizer steps over "
        f"{count(epochs, 'epoch')} on {source}; the demonstrations' NLL went {rows[0]['nll']:.3f} -> "
        f"{rows[-1]['nll']:.3f}."
    )


def _demo_source(data: Row | None, pipeline: PipelineConfig | None) -> str:
    if data is not None:
        return f"{data['demonstrations']} expert demonstrations of {data['tasks']} train tasks"
    if pipeline is None:
        return "expert demonstrations (how many is not recorded in this run dir)"
    limits = [n for n in (pipeline.train_tasks, pipeline.sft_tasks) if n]
    tasks = f"the first {min(limits)}" if limits else "all"
    extra = (
        f", plus the successes in {len(pipeline.demos_from)} file(s)" if pipeline.demos_from else ""
    )
    return (
        f"expert demonstrations of {tasks} train-split tasks{extra} (how many demonstrations "
        "were resolved is not recorded in this run dir)"
    )


def rl_line(rows: Sequence[Row], data: Row | None, settings: Settings) -> str:
    """One bullet on the RL stage: steps, groups, episodes, and which tasks."""
    if not rows:
        return "- **RL**: no `rl` rows in metrics.jsonl yet."
    steps, version = len(rows), int(rows[-1]["version"])
    text = f"- **RL** (asynchronous GRPO): {steps} steps"
    if (t := settings.train) is not None:
        groups = steps * t.groups_per_step
        text += (
            f"; each trains on {count(t.groups_per_step, 'group')} of {t.group_size} attempts at "
            f"one task ({count(t.groups_per_step * t.group_size, 'episode')}{_probed(t)}), so "
            f"{count(groups, 'group')} in all: at most "
            f"{count(min(groups, _task_bound(data, settings.pipeline) or groups), 'distinct task')} "
            "trained on"
        )
    text += f", {_rl_tasks(data, settings.pipeline)}."
    if version < steps:
        text += f" {steps - version} step(s) changed no weights (no group had an advantage)."
    return text


def _probed(t: TrainConfig) -> str:
    """`train.probe`: how many of a group's attempts came only after a solve."""
    if not t.probe:
        return ""
    rest = t.group_size - t.probe
    return (
        f" at most: the last {rest} only for a task one of the first {t.probe} solved, "
        f"`train.probe`; a task they never solved is a group of {t.probe}"
    )


def _task_bound(data: Row | None, pipeline: PipelineConfig | None) -> int | None:
    """How many tasks RL could draw from, if known (its tasks are among the first
    `train_tasks` of the split whatever the SFT split or the screen keeps)."""
    if data is not None and "tasks" in data:
        return int(data["tasks"])
    if _streamed(data) or pipeline is None or not pipeline.train_tasks:  # a stream: unbounded
        return None
    return pipeline.train_tasks


def _streamed(data: Row | None) -> bool:
    """RL drew from `pipeline.rl_stream` (its `rl_data` row has a stream position, no task count)."""
    return data is not None and "stream_position" in data


def _rl_tasks(data: Row | None, pipeline: PipelineConfig | None) -> str:
    if _streamed(data):
        return "each group a fresh instance of the train part (`pipeline.rl_stream`), none twice"
    if data is not None:
        return f"drawn from {data['tasks']} train tasks"
    if pipeline is None:
        return "drawn from the train split"
    if pipeline.rl_tasks == "unseen":
        where = "the train-split tasks SFT had no demonstration of"
    else:
        where = f"the first {pipeline.train_tasks}" if pipeline.train_tasks else "all"
        where += " train-split tasks"
        if pipeline.sft:
            where += " (SFT's among them)" if pipeline.sft_tasks else " (the same as SFT's)"
    if pipeline.screen_samples:
        where += ", kept only where the screen (screen/) solved some but not all samples"
    return f"drawn from {where}"


def measured_line(stage: str, r: EvalResult) -> str:
    """One bullet on what an eval measured, from its pins and counts."""
    step = rl_step(stage)
    what = {
        "base": "the starting model, before any training",
        "sft": "after SFT, before RL",
        "sft_more": "the SFT start trained on fresh demonstrations for RL's wall time",
    }
    words = f"after RL step {step}" if step is not None else what.get(stage, "a further eval")
    return (
        f"- **{stage}** ({words}; policy `{r.pins.policy}`): `{r.pins.suite}`, "
        f"{size(r)} = {count(r.overall.episodes, 'episode')}."
    )


# ---------------------------------------------------------------- what the numbers allow


def interval_lines(evals: Mapping[str, EvalResult]) -> list[str]:
    """One bullet per distinct outcome (stages with the same figures share one)."""
    stages: dict[str, list[str]] = {}
    for stage, r in evals.items():
        stages.setdefault(interval_words(r), []).append(stage)
    return [f"- **{', '.join(names)}**: {words}" for words, names in stages.items()]


def interval_words(r: EvalResult) -> str:
    """An eval's count and the 95% interval on its pass@1, in plain words."""
    c, n, p = resolved(r), r.overall.episodes, r.overall.pass1
    text = f"{c} of {count(n, 'episode')} resolved"
    if r.errors:
        text += f" ({r.errors} crashed, counted as unresolved)"
    if c == 0:
        return text + (
            f". Zero is no proof that the policy cannot solve these tasks: the 95% interval "
            f"[0, {p.high:.3f}] still allows a true pass rate up to {percent(p.high)}."
        )
    if c == n:
        return text + (
            f": the 95% interval [{p.low:.3f}, 1] still allows a true pass rate as low "
            f"as {percent(p.low)}."
        )
    return text + (
        f", pass@1 {p.value:.3f}: the 95% interval allows a true pass rate anywhere from "
        f"{percent(p.low)} to {percent(p.high)}."
    )


def method_line(evals: Mapping[str, EvalResult]) -> str:
    """How the intervals are computed, with the run's own figure for why it matters."""
    text = (
        "The intervals are Wilson score intervals on a design-effect-adjusted episode "
        "count (`eval/stats.py::clustered_wilson`): samples of one task are correlated, "
        "so they count as fewer independent draws than there are episodes, and more "
        "tasks narrow an interval more than more samples of the same tasks."
    )
    for stage, r in evals.items():
        c, n, p = resolved(r), r.overall.episodes, r.overall.pass1
        naive = stats.wilson_interval(c, n).high
        if abs(naive - p.high) >= 0.005:
            return text + (
                f" For {stage}, {c} of {count(n, 'episode')} taken as independent would bound the "
                f"rate at {naive:.3f}; allowing for the correlation it is {p.high:.3f}."
            )
    return text


def comparison_line(evals: Mapping[str, EvalResult], cfg: EvalConfig, where: str) -> str | None:
    """The paired comparison of RL's last eval with its starting point, via the gate."""
    start = "sft" if "sft" in evals else "base"
    ends = [s for s in evals if rl_step(s) is not None]
    if start not in evals or not ends:
        return None
    end = ends[-1]
    cand, inc = evals[end], evals[start]
    head = f"- **{start} -> {end}**:"
    command = f"`shadowrl gate --candidate {where}/eval_{end} --incumbent {where}/eval_{start}`"
    if resolved(cand) == resolved(inc) == 0:
        return (
            f"{head} neither resolved an episode, so these evals cannot tell the two "
            f"policies apart; that takes more held-out tasks, or a policy that solves some."
        )
    try:
        d = gate(cand, inc, margin=cfg.margin, alpha=cfg.alpha, test=cfg.test)
    except PinMismatch as e:
        return f"{head} not comparable: {e}."
    lo, hi = d.delta.low, d.delta.high
    noise = ": it includes 0, so the change is within noise at this size" if lo <= 0 <= hi else ""
    return (
        f"{head} Δ pass@1 {d.delta.mean:+.3f} over {d.tasks} paired tasks, "
        f"{1 - 2 * cfg.alpha:.0%} paired-bootstrap interval [{lo:+.3f}, {hi:+.3f}]{noise}. "
        f"The gate's paired test: {d.reason} ({command} also applies its alarms and power "
        "check, `eval/gate.decide`)."
    )


# ---------------------------------------------------------------- train tasks vs held-out


def heldout_by_step(evals: Mapping[str, EvalResult], start: str) -> dict[int, tuple[str, Estimate]]:
    """Held-out pass@1 by the RL step it was taken after (0 = `start`, RL's start)."""
    out = {0: (start, evals[start].overall.pass1)} if start in evals else {}
    for stage, r in evals.items():
        if (step := rl_step(stage)) is not None:
            out[step] = (stage, r.overall.pass1)
    return out


def sampled_pass_rate(r: Row) -> float:
    """A step's pass rate over every episode it sampled: with `informative_only` its trained
    groups are all mixed by construction (rows of older runs have only `pass_rate`)."""
    return float(r.get("pass_rate_sampled", r["pass_rate"]))


def step_table(rows: Sequence[Row], held: Mapping[int, tuple[str, Estimate]]) -> list[str]:
    """Per RL step: train-task reward and pass rate beside the held-out evals."""
    by_step, out = {int(r["step"]): r for r in rows}, []
    for step in sorted({*by_step, *held}):
        cell = ""
        if step in held:
            name, p = held[step]
            cell = f"{name}: {p.value:.3f} [{p.low:.3f}, {p.high:.3f}]"
        if (r := by_step.get(step)) is None:
            out.append((step, "", "", "", cell, "", "", "", ""))
            continue
        out.append((
            step, f"{r['reward']:.3f}", f"{sampled_pass_rate(r):.2f}",
            f"{r.get('hack_rate', 0):.2f}", cell, f"{r.get('loss', 0):.4f}",
            f"{r['staleness_mean']:.2f}", f"{r['gen_tokens_per_s']:.1f}", f"{r['step_s']:.1f}",
        ))  # fmt: skip
    header = ("step", "train reward", "train pass rate", "hack attempts",
              "held-out pass@1 [95% CI]", "loss", "staleness", "tok/s", "step s")  # fmt: skip
    return table(header, out)


def train_trend(rows: Sequence[Row], held: Mapping[int, tuple[str, Estimate]]) -> str:
    """RL's pass rate on its own train tasks early vs late, beside held-out's move."""
    if len(rows) < 2:
        only = sampled_pass_rate(rows[0])
        text = f"On its own train tasks RL's pass rate was {only:.2f} (one step)."
        return text + _heldout_move(held, rising=False)
    half = len(rows) // 2
    early, late = rows[:half], rows[half:]

    def span(part: Sequence[Row]) -> str:
        a, b = part[0]["step"], part[-1]["step"]
        return f"step {a}" if a == b else f"steps {a}-{b}"

    def rate(part: Sequence[Row]) -> float:
        return fmean(sampled_pass_rate(r) for r in part)

    text = (
        f"On its own train tasks RL's pass rate averaged {rate(early):.2f} in {span(early)} "
        f"and {rate(late):.2f} in {span(late)} (mean reward {fmean(r['reward'] for r in early):.3f} "
        f"-> {fmean(r['reward'] for r in late):.3f}); a step's figure moves with the few "
        "tasks it drew."
    )
    return text + _heldout_move(held, rising=rate(late) > rate(early))


def _heldout_move(held: Mapping[int, tuple[str, Estimate]], *, rising: bool) -> str:
    if len(held) < 2:
        return ""
    (n0, p0), (n1, p1) = held[min(held)], held[max(held)]
    text = f" Held-out pass@1 went {p0.value:.3f} ({n0}) -> {p1.value:.3f} ({n1})."
    if rising and p1.value <= p0.value:
        text += (
            " The train tasks rose and held-out did not: at this size that is RL fitting "
            "the tasks it drew, or noise, not a skill shown to transfer."
        )
    return text


# ---------------------------------------------------------------- what next


def what_next_lines(evals: Mapping[str, EvalResult]) -> list[str]:
    """Where to go from this run (no figure here: every number in a report is its own)."""
    sizes = ", ".join(dict.fromkeys(size(r) for r in evals.values())) or "none"
    return [
        "## What next",
        "",
        f"This run's held-out evals: {sizes}. A larger run, sized by a power plan written "
        "before it ran: `shadowrl train --config configs/learn-family.yaml` (the plan: "
        "`docs/results/learning/plan.md`). `docs/STATUS.md` records what other runs measured.",
        "",
    ]
