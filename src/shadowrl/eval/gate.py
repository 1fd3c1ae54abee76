"""The deploy gate: promote a candidate checkpoint unless it measurably regresses.

Rule (default test, `bootstrap`). On the tasks both runs share, let p_c(i) and
p_i(i) be the candidate's and the incumbent's pass rates on task i (resolved samples
/ samples) and Δ = mean_i [p_c(i) − p_i(i)]. Let U be the one-sided (1 − alpha) upper
confidence bound of Δ from a seeded paired bootstrap over tasks (over groups of
tasks made from the same source, `TaskResult.group`, which are correlated). Then

    reject  iff  U < −margin     (the candidate is significantly worse than
                                   the incumbent minus the margin)
    promote otherwise.

So a candidate is never held back by noise, nor by a drop of at most `margin` in
pass rate, and the incumbent stays only on evidence at level `alpha`. With the
`sign` test the evidence is instead an exact one-sided McNemar/sign test on sample
pairs (sample j of task i under each policy; valid because samples are independent
given the task), and the drop must also exceed the margin: reject iff
p < alpha and Δ < −margin.

An incomplete run (any crashed episode on either side) never promotes: a crash is
counted as unresolved, which could hide a regression or fake an improvement.

What must match (else `PinMismatch`): the suite's content hash and version (a grown
suite's, `tasks/versions.py`), the harness version,
the samples per task, the task ids, and the config sections that shape what is
measured: the agent's budgets, prompt and tools (`agent`), the sandbox limits
(`sandbox`) and the reward shaping (`tasks.shaping`); see `MEASURED_SECTIONS`. The
`model`, `engine`, `train`, `eval` (margin, concurrency), `seed`, `run_dir` and task
cache settings describe the policy or the bookkeeping, and are expected to differ;
which tasks were run is pinned by the suite hash instead of the `tasks` section.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field

from shadowrl.eval import stats
from shadowrl.eval.result import EvalResult, TaskResult

MEASURED_SECTIONS = ("agent", "sandbox", "tasks.shaping")


class PinMismatch(ValueError):
    """The two results measured different things; comparing them would be meaningless."""


class GateDecision(BaseModel):
    """The gate's verdict and the statistics behind it."""

    promote: bool = Field(description="Deploy the candidate.")
    reason: str = Field(description="One human-readable sentence explaining the verdict.")
    test: str = Field(description="Name of the paired test that decided.")
    margin: float = Field(description="Tolerated drop in mean pass rate.")
    alpha: float = Field(description="Significance level.")
    tasks: int = Field(description="Paired tasks compared.")
    candidate_rate: float = Field(description="Candidate's mean per-task pass rate.")
    incumbent_rate: float = Field(description="Incumbent's mean per-task pass rate.")
    delta: stats.PairedDifference = Field(description="Candidate − incumbent, paired bootstrap.")
    sign: stats.SignTest = Field(description="Exact McNemar/sign test on paired samples.")


def check_pins(candidate: EvalResult, incumbent: EvalResult) -> None:
    """Raise `PinMismatch` unless the two results measured the same thing."""
    a, b = candidate.pins, incumbent.pins
    problems = []
    if a.suite_hash != b.suite_hash:
        problems.append(f"suite hash {a.suite_hash} != {b.suite_hash} ({a.suite} vs {b.suite})")
    if a.suite_version != b.suite_version:
        problems.append(f"suite version {a.suite_version} != {b.suite_version}")
    if a.harness_version != b.harness_version:
        problems.append(f"harness version {a.harness_version} != {b.harness_version}")
    if candidate.samples != incumbent.samples:
        problems.append(f"samples per task {candidate.samples} != {incumbent.samples}")
    for section in MEASURED_SECTIONS:
        if a.config_sections.get(section) != b.config_sections.get(section):
            problems.append(f"config section '{section}' differs")
    if [t.instance_id for t in candidate.tasks] != [t.instance_id for t in incumbent.tasks]:
        problems.append("task ids differ")
    if problems:
        raise PinMismatch("results are not comparable: " + "; ".join(problems))


def _sample_pairs(cand: list[TaskResult], inc: list[TaskResult]) -> tuple[list[bool], list[bool]]:
    c_out, i_out = [], []
    for ct, it in zip(cand, inc, strict=True):
        for cs, is_ in zip(ct.samples, it.samples, strict=True):
            c_out.append(cs.resolved)
            i_out.append(is_.resolved)
    return c_out, i_out


Rule = Callable[[stats.PairedDifference, stats.SignTest, float, float], tuple[bool, str]]


def _bootstrap_rule(
    d: stats.PairedDifference, _: stats.SignTest, margin: float, alpha: float
) -> tuple[bool, str]:
    bound = f"upper {1 - alpha:.0%} bound of Δ = {d.upper:+.3f}"
    if d.upper < -margin:
        return True, f"significantly worse: {bound} < −margin = {-margin:+.3f}"
    return False, f"no significant regression: {bound} ≥ −margin = {-margin:+.3f}"


def _sign_rule(
    d: stats.PairedDifference, s: stats.SignTest, margin: float, alpha: float
) -> tuple[bool, str]:
    counts = f"{s.worse} pairs worse, {s.better} better, one-sided p = {s.p_worse:.3g}"
    if s.p_worse < alpha and d.mean < -margin:
        return True, f"significantly worse: {counts} < {alpha}, Δ = {d.mean:+.3f} < −margin"
    return False, f"no significant regression beyond the margin: {counts}, Δ = {d.mean:+.3f}"


RULES: dict[str, Rule] = {"bootstrap": _bootstrap_rule, "sign": _sign_rule}


def gate(
    candidate: EvalResult,
    incumbent: EvalResult,
    *,
    margin: float,
    alpha: float,
    test: str = "bootstrap",
    resamples: int = 5000,
    seed: int = 0,
) -> GateDecision:
    """Decide whether `candidate` may replace `incumbent` (rule in the module docstring)."""
    if test not in RULES:
        raise ValueError(f"unknown gate test {test!r}; choose from {sorted(RULES)}")
    check_pins(candidate, incumbent)
    cand_rates = [t.pass_rate for t in candidate.tasks]
    inc_rates = [t.pass_rate for t in incumbent.tasks]
    delta = stats.paired_bootstrap(
        cand_rates,
        inc_rates,
        alpha=alpha,
        resamples=resamples,
        seed=seed,
        clusters=[t.cluster for t in candidate.tasks],
    )
    sign = stats.sign_test(*_sample_pairs(candidate.tasks, incumbent.tasks))
    regressed, why = RULES[test](delta, sign, margin, alpha)
    crashed = candidate.errors + incumbent.errors
    if crashed:
        promote = False
        reason = f"reject: {crashed} crashed episode(s) make the comparison incomplete; rerun"
    else:
        promote = not regressed
        reason = f"{'promote' if promote else 'reject'}: {why}"
    return GateDecision(
        promote=promote,
        reason=reason,
        test=test,
        margin=margin,
        alpha=alpha,
        tasks=len(cand_rates),
        candidate_rate=sum(cand_rates) / len(cand_rates),
        incumbent_rate=sum(inc_rates) / len(inc_rates),
        delta=delta,
        sign=sign,
    )
