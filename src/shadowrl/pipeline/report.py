"""The human-readable report of a training run: curves, staleness, throughput, evals.

Everything is read back from the run directory (metrics.jsonl and the eval.json of
each stage), so the report can be regenerated for any run, finished or not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shadowrl.eval.result import EvalResult
from shadowrl.metrics import read_metrics


def run_evals(run_dir: str | Path) -> dict[str, EvalResult]:
    """Every held-out eval in `run_dir` (`eval_<stage>/eval.json`), keyed by stage.

    Ordered base, then SFT, then RL by step, then any other (e.g. a re-evaluation
    with more samples), so a run resumed several times reports its whole history.
    """

    def order(stage: str) -> tuple[int, int, str]:
        if m := re.fullmatch(r"rl_step(\d+)", stage):
            return 2, int(m[1]), stage
        return {"base": (0, 0, stage), "sft": (1, 0, stage)}.get(stage, (3, 0, stage))

    found = {p.parent.name.removeprefix("eval_"): p for p in Path(run_dir).glob("eval_*/eval.json")}
    return {stage: EvalResult.load(found[stage]) for stage in sorted(found, key=order)}


def _plot_curves(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    axes[0].plot(steps, [r["reward"] for r in rows], marker="o", label="reward")
    axes[0].plot(steps, [r["pass_rate"] for r in rows], marker="s", label="pass rate")
    axes[0].set_xlabel("step")
    axes[0].legend()
    axes[0].set_title("reward and pass rate per step")
    lags = [r["staleness_mean"] for r in rows]
    axes[1].hist(lags, bins=max(1, len(set(lags))), color="tab:orange")
    axes[1].set_xlabel("mean staleness of a step's groups (versions)")
    axes[1].set_title("staleness")
    axes[2].plot(steps, [r["gen_tokens_per_s"] for r in rows], marker="o", color="tab:green")
    axes[2].set_xlabel("step")
    axes[2].set_title("generated tokens / s")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_evals(evals: Mapping[str, EvalResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(evals)
    est = [evals[n].overall.pass1 for n in names]
    values = [e.value for e in est]
    err = [[e.value - e.low for e in est], [e.high - e.value for e in est]]
    fig, ax = plt.subplots(figsize=(max(4.5, 1.2 * len(names)), 3.4))
    ax.bar(names, values, yerr=err, capsize=6, color="tab:blue")
    ax.set_xticks(range(len(names)), [f"{n}\nk={evals[n].samples}" for n in names])
    ax.set_ylabel("held-out pass@1 (95% CI)")
    ax.set_ylim(0, 1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _eval_lines(evals: Mapping[str, EvalResult]) -> list[str]:
    lines = [
        "## Held-out evaluation",
        "",
        "| stage | samples/task | pass@1 | 95% CI | pass@k (k = samples) | tasks solved | episodes |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in evals.items():
        p, top = r.overall.pass1, r.overall.pass_k[max(r.overall.pass_k)].value
        solved = sum(c > 0 for _, c in (t.counts for t in r.tasks))
        lines.append(
            f"| {name} | {r.samples} | {p.value:.3f} | [{p.low:.3f}, {p.high:.3f}] "
            f"| {top:.3f} | {solved}/{len(r.tasks)} | {r.overall.episodes} |"
        )
    if len({r.samples for r in evals.values()}) > 1:
        lines += ["", "Compare rows with equal samples/task: the gate refuses the others."]
    return [*lines, "", "![eval](eval_pass1.png)", ""]


def write_run_report(run_dir: str | Path) -> Path:
    """Write `report.md` (+ PNG plots) into `run_dir` from what it holds; returns its path."""
    run_dir = Path(run_dir)
    rows = read_metrics(run_dir / "metrics.jsonl", "rl")
    lines = [f"# shadowrl run `{run_dir.name}`", ""]
    if evals := run_evals(run_dir):
        _plot_evals(evals, run_dir / "eval_pass1.png")
        lines += _eval_lines(evals)
    if rows:
        _plot_curves(rows, run_dir / "curves.png")
        total_tokens = sum(r["gen_tokens"] for r in rows)
        total_s = sum(r["step_s"] for r in rows)
        lines += [
            "## RL",
            "",
            f"- steps: {len(rows)}; final version {rows[-1]['version']}",
            f"- generated tokens: {total_tokens} in {total_s:.0f} s ({total_tokens / max(total_s, 1e-9):.1f} tok/s)",
            f"- groups dropped as stale: {rows[-1]['groups_stale']}; failed: {rows[-1]['groups_failed']}",
            f"- zero-advantage groups: {sum(r['zero_adv_groups'] for r in rows)}",
            "",
            "![curves](curves.png)",
            "",
            "| step | reward | pass rate | loss | staleness | tok/s | step s |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['step']} | {r['reward']:.3f} | {r['pass_rate']:.2f} | {r.get('loss', 0):.4f} "
            f"| {r['staleness_mean']:.2f} | {r['gen_tokens_per_s']:.1f} | {r['step_s']:.1f} |"
            for r in rows
        ]
    path = run_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
