"""Ablations: one config field changed, both arms on the same tasks and seeds, paired.

Cursor measures a harness feature by turning it off for one model and comparing
(semantic search, per model). The gate refuses such a pair on purpose: its pins say
the two results measured different things. An ablation is the one comparison where
that is the point, so it checks the rest instead: the same suite hash, task ids,
samples per task and harness version, and at most the ablated section differing.
The result is the paired difference of per-task pass rates, ablated − base, with the
same clustered paired bootstrap the gate uses.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from shadowrl.eval import stats
from shadowrl.eval.result import EvalResult


class AblationResult(BaseModel):
    """`shadowrl eval --ablate`: what changed and what it did."""

    field: str = Field(description="The config field changed in the ablated arm.")
    value: str = Field(description="Its value there, as given on the command line.")
    tasks: int = Field(description="Paired tasks.")
    samples: int = Field(description="Episodes per task in each arm.")
    base_rate: float = Field(description="Base arm's mean per-task pass rate.")
    ablated_rate: float = Field(description="Ablated arm's mean per-task pass rate.")
    delta: stats.PairedDifference = Field(description="Ablated − base, paired bootstrap.")
    sign: stats.SignTest = Field(description="Exact sign test, ablated vs base samples.")


def compare(
    base: EvalResult, ablated: EvalResult, field: str, value: str, *,
    alpha: float, resamples: int, seed: int,
) -> AblationResult:  # fmt: skip
    """Pair two arms; a ValueError when they ran different tasks or samples."""
    if [t.instance_id for t in base.tasks] != [t.instance_id for t in ablated.tasks]:
        raise ValueError("the arms ran different tasks")
    if base.pins.suite_hash != ablated.pins.suite_hash or base.samples != ablated.samples:
        raise ValueError("the arms ran different suites or samples per task")
    b = [t.pass_rate for t in base.tasks]
    a = [t.pass_rate for t in ablated.tasks]
    delta = stats.paired_bootstrap(
        a, b, alpha=alpha, resamples=resamples, seed=seed,
        clusters=[t.cluster for t in base.tasks],
    )  # fmt: skip
    pairs = [
        (sa.resolved, sb.resolved)
        for ta, tb in zip(ablated.tasks, base.tasks, strict=True)
        for sa, sb in zip(ta.samples, tb.samples, strict=True)
    ]
    sign = stats.sign_test([p[0] for p in pairs], [p[1] for p in pairs])
    return AblationResult(
        field=field, value=value, tasks=len(b), samples=base.samples,
        base_rate=sum(b) / len(b), ablated_rate=sum(a) / len(a), delta=delta, sign=sign,
    )  # fmt: skip
