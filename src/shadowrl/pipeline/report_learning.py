"""The words of a run report on whether RL learned: RL against its SFT start and against
SFT-more on the held-out tasks, how each policy behaves, how much exploration the warm
start kept, and, when the run cannot show a gain, how large an eval would.

Every figure comes from this run's own records (its eval results and metrics rows);
nothing is quoted from another run or a document. All pure: data in, Markdown out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shadowrl.eval import EvalResult, stats
from shadowrl.eval.gate import PinMismatch, check_pins
from shadowrl.markdown import table
from shadowrl.pipeline.sizing import EvalSize, eval_size

Row = Mapping[str, Any]
ALPHA = 0.05  # one-sided: a gain is claimed when the 95 % lower bound is above 0


def final_rl(evals: Mapping[str, EvalResult]) -> str | None:
    """The stage name of RL's last held-out eval (`rl_stepN`, largest N), if any."""
    steps = [s for s in evals if s.startswith("rl_step") and s[7:].isdigit()]
    return max(steps, key=lambda s: int(s[7:])) if steps else None


# ---------------------------------------------------------------- how each policy behaves


def behaviour_lines(evals: Mapping[str, EvalResult]) -> list[str]:
    """Per policy: failed or malformed tool calls, turns and submit rate per episode."""
    rows = []
    for name, r in evals.items():
        samples = [s for t in r.tasks for s in t.samples]
        n = max(len(samples), 1)
        rows.append((
            name, len(samples), f"{sum(s.tool_errors for s in samples) / n:.2f}",
            f"{sum(s.turns for s in samples) / n:.2f}",
            f"{sum(s.end == 'submitted' for s in samples) / n:.2f}",
            f"{sum(s.tokens for s in samples) / n:.0f}",
        ))  # fmt: skip
    header = ("policy", "episodes", "failed or malformed tool calls / episode",
              "turns / episode", "submit rate", "generated tokens / episode")  # fmt: skip
    return ["## How each policy behaves (held-out episodes)", "", *table(header, rows), ""]


def kind_lines(evals: Mapping[str, EvalResult]) -> list[str]:
    """Per kind of injected bug (mutation operator): tasks and each policy's pass@1 on
    them, where the held-out tasks were made by mutation. Where the policies differ by
    kind shows which bugs hold contrast for RL."""
    kinds = sorted({t.bug_kind for r in evals.values() for t in r.tasks} - {""})
    if not kinds:
        return []
    rows = []
    for kind in kinds:
        cells: list[str] = []
        for r in evals.values():
            counts = [t.counts for t in r.tasks if t.bug_kind == kind]
            n, c = sum(n for n, _ in counts), sum(c for _, c in counts)
            cells.append(f"{c}/{n} = {c / n:.2f}" if n else "")
        tasks = {t.instance_id for r in evals.values() for t in r.tasks if t.bug_kind == kind}
        rows.append((kind, len(tasks), *cells))
    header = ("bug kind", "tasks", *(f"{name} pass@1" for name in evals))
    return ["## Held-out pass@1 by kind of bug", "", *table(header, rows), ""]


# ---------------------------------------------------------------- did RL learn


@dataclass(frozen=True)
class Paired:
    """Candidate − incumbent on the same held-out tasks, clustered by template."""

    candidate: str
    incumbent: str
    diff: stats.PairedDifference  # low = the one-sided 95 % lower bound
    size: EvalSize

    @property
    def significant(self) -> bool:
        return self.diff.low > 0


def paired(
    evals: Mapping[str, EvalResult], candidate: str, incumbent: str, gain: float
) -> Paired | str | None:
    """The comparison, or why it cannot be made (None: an arm is missing)."""
    if candidate not in evals or incumbent not in evals:
        return None
    cand, inc = evals[candidate], evals[incumbent]
    try:
        check_pins(cand, inc)
    except PinMismatch as e:
        return str(e)
    diffs = [c.pass_rate - i.pass_rate for c, i in zip(cand.tasks, inc.tasks, strict=True)]
    clusters = [t.cluster for t in cand.tasks]
    diff = stats.paired_bootstrap(
        [t.pass_rate for t in cand.tasks],
        [t.pass_rate for t in inc.tasks],
        alpha=ALPHA,
        clusters=clusters,
    )
    episodes = cand.overall.episodes
    size = eval_size(diffs, clusters, episodes=episodes, eval_s=cand.wall_s + inc.wall_s, gain=gain)
    return Paired(candidate, incumbent, diff, size)


def paired_line(p: Paired) -> str:
    d, s = p.diff, p.size
    text = (
        f"- **{p.candidate} − {p.incumbent}**: Δ pass@1 {d.mean:+.3f} over {s.tasks} paired "
        f"tasks of {s.templates} templates; paired bootstrap over templates, one-sided 95 % "
        f"lower bound {d.low:+.3f} (90 % interval [{d.low:+.3f}, {d.high:+.3f}])"
    )
    if p.significant:
        return text + f": a significant gain of {p.candidate} over {p.incumbent}."
    return text + ": **not a significant gain** at this size. " + size_words(p.size)


def size_words(s: EvalSize) -> str:
    """What this run's variance says an eval would need to show `s.gain`."""
    if not s.sizable:
        return (
            "The two arms differ on no template in a way that varies (or there is one "
            "template), so this run has no variance to size a larger eval from: it needs "
            "held-out tasks both policies solve sometimes."
        )
    caveat = (
        f"Only {s.differing} paired task(s) differ between the arms, so the variance below "
        "rests on them and the size scaled from it is a rough guess, likely too small. "
        if s.rough
        else ""
    )
    return caveat + (
        f"From this run's own variance (cluster-robust standard error {s.se:.3f}), detecting "
        f"a gain of +{s.gain:.2f} (one-sided α = {s.alpha}, power {s.power}) takes about "
        f"{s.factor:.1f}× this eval: ~{s.needed(s.templates)} templates, "
        f"~{s.needed(s.tasks)} tasks, ~{s.needed(s.episodes)} episodes per arm, "
        f"~{_duration(s.factor * s.eval_s)} of eval for the two arms at this run's pace."
    )


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "an unbounded time"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def learning_lines(evals: Mapping[str, EvalResult], gain: float) -> list[str]:
    """RL − SFT and RL − SFT-more on the held-out tasks, with what they allow."""
    rl = final_rl(evals)
    if rl is None:
        return []
    lines = ["## Did RL learn? (RL − SFT, RL − SFT-more, clustered by template)", ""]
    for incumbent in ("sft", "sft_more"):
        p = paired(evals, rl, incumbent, gain)
        if isinstance(p, Paired):
            lines.append(paired_line(p))
        elif isinstance(p, str):
            lines.append(f"- **{rl} − {incumbent}**: not comparable ({p}).")
    if "sft_more" not in evals:
        lines.append(
            "- **SFT-more** (the SFT start trained on fresh demonstrations for RL's wall time) "
            "was not run (`pipeline.sft_more: false`), so a gain over SFT could still be "
            "the extra training rather than RL."
        )
    return [*lines, ""]


# ---------------------------------------------------------------- exploration


def exploration_lines(metrics: Sequence[Row], rl_rows: Sequence[Row]) -> list[str]:
    """Entropy of each policy on held-out demos, SFT's checks, zero-advantage groups."""
    lines = ["## Exploration: what the warm start left RL to learn from", ""]
    scored = {r["policy"]: r for r in metrics if r.get("kind") == "demo_score"}
    if scored:
        lines += [
            "Mean per-token entropy (temperature 1) and NLL of each policy on expert "
            "demonstrations of held-out dev tasks (teacher-forced; no stage trains on them):",
            "",
        ]
        rows = [(p, f"{r['entropy']:.3f}", f"{r['nll']:.3f}", int(r["tokens"]))
                for p, r in scored.items()]  # fmt: skip
        lines += [*table(("policy", "entropy (nats)", "NLL (nats)", "tokens"), rows), ""]
    lines += _check_lines([r for r in metrics if r.get("kind") == "sft_check"])
    if rl_rows:
        zero = sum(r.get("zero_adv_groups", 0) for r in rl_rows)
        groups = sum(r.get("groups", 0) for r in rl_rows)
        per = ", ".join(f"{int(r.get('zero_adv_groups', 0))}/{int(r.get('groups', 0))}"
                        for r in rl_rows)  # fmt: skip
        share = f" ({zero / groups:.0%})" if groups else ""
        lines += [
            f"Zero-advantage groups (all attempts scored alike: nothing to learn) per RL step: "
            f"{per}; {int(zero)} of {int(groups)} groups in all{share}.",
            "",
        ]
    return lines if len(lines) > 2 else []


def sft_more_line(metrics: Sequence[Row]) -> str | None:
    """One bullet on the SFT-more arm, from its `sft_more_data` and `sft_more_done` rows."""
    data = next((r for r in reversed(metrics) if r.get("kind") == "sft_more_data"), None)
    done = next((r for r in reversed(metrics) if r.get("kind") == "sft_more_done"), None)
    if data is None or done is None:
        return None
    ended = {"data": "its demonstrations ran out first", "budget": "RL's time was spent",
             "patience": "the dev NLL stopped falling"}[str(done["stopped"])]  # fmt: skip
    return (
        f"- **SFT-more** (the control arm): the SFT checkpoint trained {int(done['steps'])} "
        f"more steps on up to {int(data['demonstrations'])} expert demonstrations of RL's "
        f"{int(data['tasks'])} tasks, within RL's wall time ({data['budget_s']:.0f} s); it "
        f"ended when {ended}, and kept the weights of step {int(done['best_step'])}."
    )


def _check_lines(checks: Sequence[Row]) -> list[str]:
    if not checks:
        return []
    by_arm: dict[str, list[Row]] = {}
    for c in checks:
        by_arm.setdefault(str(c.get("arm", "sft")), []).append(c)
    out = []
    for arm, rows in by_arm.items():
        best = min(rows, key=lambda r: r["nll"])
        trail = ", ".join(f"{int(r['step'])}: {r['nll']:.3f}" for r in rows)
        out.append(
            f"{arm} checks (step: held-out dev NLL): {trail}; kept the weights of step "
            f"{int(best['step'])} (entropy {best['entropy']:.3f})."
        )
    return [*out, ""]
