"""The human-readable side of an evaluation: `report.md`, a plot and the terminal summary.

`eval.json` is for machines and the gate; this is what a person reads after a run:
the pins first (what was measured), then scores with their intervals, per tier, the
behaviour metrics, every task's outcomes, the test ids that failed in each unresolved
task (with how its runs ended) and, at the end, any crash in full.
"""

from __future__ import annotations

from pathlib import Path

from shadowrl.eval.result import EvalResult, Scores
from shadowrl.eval.stats import Estimate
from shadowrl.markdown import table


def _pct(e: Estimate) -> str:
    return f"{e.value:.1%} [{e.low:.1%}, {e.high:.1%}]"


def _score_row(name: str, s: Scores) -> tuple[object, ...]:
    ks = "; ".join(f"@{k} {_pct(e)}" for k, e in s.pass_k.items() if k > 1)
    return name, s.tasks, s.episodes, _pct(s.pass1), ks or "-", f"{s.mean_reward:.3f}", s.errors


def _scores_table(r: EvalResult) -> list[str]:
    header = ("tier", "tasks", "episodes", "pass@1 (clustered Wilson 95%)",
              "pass@k (bootstrap 95%)", "reward", "crashed")  # fmt: skip
    rows = [_score_row("**all**", r.overall)]
    return table(header, rows + [_score_row(tier, s) for tier, s in r.by_tier.items()])


def _behaviour(r: EvalResult) -> list[str]:
    b = r.behaviour
    mix = ", ".join(f"{name} {share:.0%}" for name, share in b.tool_mix.items()) or "-"
    tpr = (
        f"{b.tokens_per_resolved:.0f}" if b.tokens_per_resolved is not None else "- (none resolved)"
    )
    return [
        f"- tool mix: {mix}",
        f"- tool calls per turn: {b.tool_calls_per_turn:.2f}; turns per episode: {b.turns:.1f}",
        f"- episodes editing a file before reading it: {b.edit_before_read_rate:.0%}",
        f"- files edited per episode: {b.files_edited:.2f}; changed lines: {b.diff_lines:.1f}",
        f"- generated tokens per resolved task: {tpr}",
        f"- tool errors per episode: {b.tool_errors:.2f}; wall time per episode: {b.wall_s:.1f}s",
    ]


def _tasks_table(r: EvalResult) -> list[str]:
    rows = []
    for t in r.tasks:
        n, c = t.counts
        ends = ", ".join(sorted({s.end for s in t.samples}))
        tokens = sum(s.tokens for s in t.samples) // max(n, 1)
        turns = sum(s.turns for s in t.samples) / max(n, 1)
        rows.append((t.instance_id, t.tier, f"{c}/{n}", ends, tokens, f"{turns:.1f}"))
    return table(("task", "tier", "resolved", "ends", "tokens", "turns"), rows)


def _failing(r: EvalResult) -> list[str]:
    """Per task with an unresolved graded sample: the ids at fault and how the runs ended."""
    lines: list[str] = []
    for t in r.tasks:
        graded = [s.grading for s in t.samples if not s.resolved and s.grading is not None]
        if not graded:
            continue
        ids: dict[str, set[str]] = {}
        for g in graded:
            for test_id, outcome in g.failing.items():
                ids.setdefault(test_id, set()).add(outcome)
        status = ", ".join(sorted({g.status for g in graded}))
        lines.append(f"- **{t.instance_id}** ({len(graded)} unresolved; runs: {status})")
        lines += [f"  - `{i}`: {', '.join(sorted(v))}" for i, v in ids.items()]
        lines += [
            f"  - tampering: {hit}" for hit in sorted({h for g in graded for h in g.tampered})
        ]
    return ["## Failing tests of unresolved tasks", "", *lines, ""] if lines else []


def _errors(r: EvalResult) -> list[str]:
    crashed = [(t.instance_id, s) for t in r.tasks for s in t.samples if s.error is not None]
    if not crashed:
        return []
    lines = [f"## Crashed episodes ({len(crashed)}, counted as unresolved)", ""]
    for task_id, s in crashed:
        lines += [f"### {task_id} sample {s.sample} ({s.end})", "```", s.error or "", "```", ""]
    return lines


def render_report(r: EvalResult) -> str:
    """`report.md` of one evaluation."""
    p = r.pins
    lines = [
        f"# Evaluation of {p.policy} on {p.suite}",
        "",
        f"{len(r.tasks)} tasks × {r.samples} samples in {r.wall_s:.0f}s, finished {r.created}.",
        "",
        f"Pins: suite `{p.suite_hash}`, harness `{p.harness_version}`, config `{p.config_digest}`.",
        "",
        "## Scores",
        "",
        *_scores_table(r),
        "",
        "## Behaviour",
        "",
        *_behaviour(r),
        "",
        "## Tasks",
        "",
        *_tasks_table(r),
        "",
        *_failing(r),
        *_errors(r),
    ]
    return "\n".join(lines).rstrip() + "\n"


def plot_tiers(r: EvalResult, path: Path) -> None:
    """Bar chart of pass@1 per tier with its clustered Wilson interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["all", *r.by_tier]
    ests = [r.overall.pass1, *(s.pass1 for s in r.by_tier.values())]
    values = [e.value for e in ests]
    errs = [[e.value - e.low for e in ests], [e.high - e.value for e in ests]]
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(names), 3))
    ax.bar(names, values, yerr=errs, capsize=4, color="#4c72b0")
    ax.set_ylim(0, 1)
    ax.set_ylabel("pass@1")
    ax.set_title(f"{r.pins.policy} on {r.pins.suite}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_report(r: EvalResult, out_dir: Path) -> None:
    """Write `eval.json`, `report.md` and `pass_by_tier.png` into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    r.save(out_dir / "eval.json")
    plot_tiers(r, out_dir / "pass_by_tier.png")
    text = render_report(r).replace(
        "## Scores\n", "## Scores\n\n![pass@1 by tier](pass_by_tier.png)\n", 1
    )
    (out_dir / "report.md").write_text(text)
