"""The human-readable report of a training run: what was trained on what, the held-out
evals and what their numbers allow, train-task reward per step beside them, curves,
staleness, throughput, what optional components logged (`rl/contributions.py`), and
where to go next.

Everything is read back from the run directory (metrics.jsonl, config.yaml and the
eval.json of each stage), so the report can be regenerated for any run, finished or
not. The sentences are written by the pure functions of `report_text.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from shadowrl.eval import EvalResult
from shadowrl.eval.config import EvalConfig
from shadowrl.eval.stats import Estimate
from shadowrl.markdown import table
from shadowrl.metrics import read_metrics
from shadowrl.pipeline import report_learning as learning
from shadowrl.pipeline import report_text as text
from shadowrl.pipeline.config import PipelineConfig
from shadowrl.rl import report_sections
from shadowrl.rl.config import TrainConfig


def run_evals(run_dir: str | Path) -> dict[str, EvalResult]:
    """Every held-out eval in `run_dir` (`eval_<stage>/eval.json`), keyed by stage.

    Ordered base, then SFT, then RL by step, then any other (e.g. a re-evaluation
    with more samples), so a run resumed several times reports its whole history.
    """

    def order(stage: str) -> tuple[int, int, str]:
        if (step := text.rl_step(stage)) is not None:
            return 2, step, stage
        return {"base": (0, 0, stage), "sft": (1, 0, stage)}.get(stage, (3, 0, stage))

    found = {p.parent.name.removeprefix("eval_"): p for p in Path(run_dir).glob("eval_*/eval.json")}
    # an eval whose every episode crashed is kept in eval_<stage>.crashed/: not a result
    found = {stage: p for stage, p in found.items() if not stage.endswith(".crashed")}
    return {stage: EvalResult.load(found[stage]) for stage in sorted(found, key=order)}


def read_settings(run_dir: Path) -> text.Settings:
    """The config sections the report explains, from the config.yaml the run wrote."""
    path = run_dir / "config.yaml"
    raw = yaml.safe_load(path.read_text()) if path.is_file() else {}
    raw = raw if isinstance(raw, dict) else {}
    train = raw.get("train")
    if isinstance(train, dict):  # a run written before the run seed replaced `train.seed`
        train = {k: v for k, v in train.items() if k != "seed"}
    return text.Settings(
        pipeline=_section(PipelineConfig, raw.get("pipeline")),
        train=_section(TrainConfig, train),
        eval=_section(EvalConfig, raw.get("eval")) or EvalConfig(),
    )


M = TypeVar("M", bound=BaseModel)


def _section(model: type[M], raw: Any) -> M | None:
    """`raw` validated as `model`; None when absent or written by an incompatible version."""
    if not isinstance(raw, dict):
        return None
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def last_per_step(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per step, the last logged (a step re-run after a crash is logged twice)."""
    by_step = {r["step"]: r for r in rows}
    return [by_step[s] for s in sorted(by_step)]


def _last(rows: Sequence[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((r for r in reversed(rows) if r.get("kind") == kind), None)


def _plot_curves(
    rows: list[dict[str, Any]], held: Mapping[int, tuple[str, Estimate]], path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    axes[0].plot(steps, [r["reward"] for r in rows], marker="o", label="train reward")
    rates = [text.sampled_pass_rate(r) for r in rows]
    axes[0].plot(steps, rates, marker="s", label="train pass rate")
    hacks = [r.get("hack_rate", 0.0) for r in rows]  # rows of runs before issue 18 lack it
    axes[0].plot(steps, hacks, marker="x", linestyle=":", label="train hack-attempt rate")
    if held:
        at, est = list(held), [p for _, p in held.values()]
        err = [[p.value - p.low for p in est], [p.high - p.value for p in est]]
        axes[0].errorbar(
            at,
            [p.value for p in est],
            yerr=err,
            fmt="D",
            capsize=5,
            color="tab:red",
            label="held-out pass@1 (95% CI)",
        )
    axes[0].set_xlabel("step")
    axes[0].set_ylim(-0.02, 1.02)
    # above the axes: any corner of the plot may hold the data
    axes[0].legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1), ncol=3, frameon=False)
    axes[0].set_title("train tasks vs held-out, per step", pad=20)
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


def _eval_lines(evals: Mapping[str, EvalResult], settings: text.Settings, where: str) -> list[str]:
    rows = []
    for name, r in evals.items():
        p, top = r.overall.pass1, r.overall.pass_k[max(r.overall.pass_k)].value
        solved = sum(c > 0 for _, c in (t.counts for t in r.tasks))
        rows.append((name, r.samples, f"{p.value:.3f}", f"[{p.low:.3f}, {p.high:.3f}]",
                     f"{top:.3f}", f"{solved}/{len(r.tasks)}", r.overall.episodes))  # fmt: skip
    header = ("stage", "samples/task", "pass@1", "95% CI", "pass@k (k = samples)",
              "tasks solved", "episodes")  # fmt: skip
    lines = ["## Held-out evaluation", "", *table(header, rows)]
    if len({r.samples for r in evals.values()}) > 1:
        lines += ["", "Compare rows with equal samples/task: the gate refuses the others."]
    lines += ["", "![eval](eval_pass1.png)", "", "What these numbers allow:", ""]
    lines += text.interval_lines(evals)
    if (compared := text.comparison_line(evals, settings.eval, where)) is not None:
        lines.append(compared)
    return [*lines, "", text.method_line(evals), ""]


def _training_lines(
    metrics: Sequence[dict[str, Any]],
    rows: Sequence[dict[str, Any]],
    evals: Mapping[str, EvalResult],
    settings: text.Settings,
) -> list[str]:
    sft_rows = [r for r in metrics if r.get("kind") == "sft"]
    lines = ["## What this run did", ""]
    if sft_rows or "sft" in evals or settings.pipeline is not None:
        lines.append(text.sft_line(sft_rows, _last(metrics, "sft_data"), settings.pipeline))
    lines.append(text.rl_line(rows, _last(metrics, "rl_data"), settings))
    if (more := learning.sft_more_line(metrics)) is not None:
        lines.append(more)
    if evals:
        lines += [
            "",
            "Each held-out eval ran the policy in the serving harness on tasks no stage trained on:",
            "",
        ]
        lines += [text.measured_line(name, r) for name, r in evals.items()]
    return [*lines, ""]


def _rl_lines(
    rows: list[dict[str, Any]], held: Mapping[int, tuple[str, Estimate]], run_dir: Path
) -> list[str]:
    _plot_curves(rows, held, run_dir / "curves.png")
    total_tokens = sum(r["gen_tokens"] for r in rows)
    total_s = sum(r["step_s"] for r in rows)
    zero_adv = f"- zero-advantage groups: {sum(r['zero_adv_groups'] for r in rows)}"
    if aside := rows[-1].get("groups_set_aside"):  # `orchestrator.informative_only`
        zero_adv += f" trained, {aside} set aside untrained"
    return [
        "## RL: train tasks per step, beside the held-out evals",
        "",
        text.train_trend(rows, held),
        "",
        f"- steps: {len(rows)}; final version {rows[-1]['version']}",
        f"- generated tokens: {total_tokens} in {total_s:.0f} s ({total_tokens / max(total_s, 1e-9):.1f} tok/s)",
        f"- groups dropped as stale: {rows[-1]['groups_stale']}; failed: {rows[-1]['groups_failed']}",
        zero_adv,
        "",
        "![curves](curves.png)",
        "",
        *text.step_table(rows, held),
        "",
        *(line for section in report_sections() for line in section(rows)),
    ]


def write_run_report(run_dir: str | Path) -> Path:
    """Write `report.md` (+ PNG plots) into `run_dir` from what it holds; returns its path."""
    where = str(run_dir)
    run_dir = Path(run_dir)
    metrics = read_metrics(run_dir / "metrics.jsonl")
    rows = last_per_step([r for r in metrics if r.get("kind") == "rl"])
    settings, evals = read_settings(run_dir), run_evals(run_dir)
    start = "base" if settings.pipeline is not None and not settings.pipeline.sft else "sft"
    lines = [f"# shadowrl run `{run_dir.name}`", ""]
    lines += _training_lines(metrics, rows, evals, settings)
    if evals:
        _plot_evals(evals, run_dir / "eval_pass1.png")
        lines += _eval_lines(evals, settings, where)
        gain = settings.pipeline.target_gain if settings.pipeline is not None else 0.10
        lines += learning.learning_lines(evals, gain)
        lines += learning.behaviour_lines(evals)
        lines += learning.kind_lines(evals)
    lines += learning.exploration_lines(metrics, rows)
    if rows:
        lines += _rl_lines(rows, text.heldout_by_step(evals, start), run_dir)
    lines += text.what_next_lines(evals)
    path = run_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
