"""The record an evaluation leaves behind (`eval.json`), and the scores computed from it.

An eval result is only worth comparing if we know exactly what was measured, so it
carries **pins** next to the numbers: which tasks (content hash), which harness
(source hash of the agent package and its prompt), which config and which policy.
The gate refuses to compare results whose pins say they measured different things.
Scores are derived from the per-sample records by `score`, so a stored result can
always be re-scored and the numbers never drift from the raw outcomes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field, computed_field

from shadowrl.eval import stats
from shadowrl.eval.behaviour import Behaviour
from shadowrl.eval.stats import Estimate


class Grading(BaseModel):
    """Why the verifier decided as it did (`tasks/verify.py::Verdict`), kept per sample."""

    status: str = Field(
        description="How the test run ended: ran, collection_error, timeout, crashed, tampered."
    )
    fail_to_pass: dict[str, str] = Field(
        description="Outcome of each FAIL_TO_PASS id: passed, failed, error, skipped, missing."
    )
    pass_to_pass: dict[str, str] = Field(description="Outcome of each PASS_TO_PASS id.")
    tampered: list[str] = Field(
        default_factory=list, description="'path: pattern' hits that voided the episode."
    )
    voided_by: str = Field(
        default="",
        description="The layer that voided the episode: forbidden_text, diff_rules, "
        "workspace, test_guard, canary; '' = graded on its tests.",
    )
    log_tail: str = Field(default="", description="The last ~2 KB of the test log.")

    @property
    def failing(self) -> dict[str, str]:
        """The listed ids that did not pass, with their outcome."""
        both = {**self.fail_to_pass, **self.pass_to_pass}
        return {i: v for i, v in both.items() if v != "passed"}


class SampleResult(BaseModel):
    """One graded episode of one task."""

    sample: int = Field(description="Index of the sample within its task.")
    resolved: bool = Field(description="The verifier's verdict (False for a crashed episode).")
    reward: float = Field(description="The verifier's reward (0 for a crashed episode).")
    tokens: int = Field(default=0, description="Tokens the policy generated in the episode.")
    turns: int = Field(default=0, description="Assistant turns.")
    tool_calls: int = Field(default=0, description="Tool calls made.")
    tool_errors: int = Field(default=0, description="Failed or malformed tool calls.")
    diff_lines: int = Field(default=0, description="Lines the agent's successful edits changed.")
    clarifying: bool = Field(
        default=False, description="It asked a question instead of acting (no edit attempted)."
    )
    wall_s: float = Field(
        default=0.0, description="Wall-clock seconds of episode plus verification."
    )
    end: str = Field(description="How the episode ended (an EpisodeEnd), or 'crash'.")
    error: str | None = Field(
        default=None, description="Traceback of the exception, if it crashed."
    )
    grading: Grading | None = Field(
        default=None, description="The verifier's reasons (None if the episode crashed)."
    )


class TaskResult(BaseModel):
    """All samples of one task."""

    instance_id: str = Field(description="The task's id.")
    tier: str = Field(description="The task's difficulty tier.")
    group: str = Field(
        default="",
        description="Source the task was made from (`Task.repo`): tasks of one group are "
        "correlated and the statistics resample them together. '' = a group of its own.",
    )
    source: str = Field(
        default="",
        description="How the task was made (`Task.source`); for a mutation-made task it "
        "names the operator: 'family+ast:<operator>@<site>' (the family), "
        "'ast-mutation:<operator>[+<operator>]' (`tasks make`).",
    )
    samples: list[SampleResult] = Field(description="One record per episode, in sample order.")

    @property
    def bug_kind(self) -> str:
        """The mutation operator(s) that made the bug ('' for a task not made by mutation)."""
        origin, sep, rest = self.source.partition(":")
        if not sep or not (origin.endswith("+ast") or origin == "ast-mutation"):
            return ""
        return rest.split("@", 1)[0]

    @property
    def cluster(self) -> str:
        return self.group or f"task:{self.instance_id}"

    @property
    def counts(self) -> tuple[int, int]:
        """`(n, c)`: samples run and samples resolved."""
        return len(self.samples), sum(s.resolved for s in self.samples)

    @property
    def pass_rate(self) -> float:
        n, c = self.counts
        return c / n if n else 0.0

    @computed_field(description="Samples whose grading was voided as tampering (any layer).")  # type: ignore[prop-decorator]
    @property
    def tampered(self) -> int:
        return sum(s.grading is not None and s.grading.status == "tampered" for s in self.samples)


class Scores(BaseModel):
    """Success rates of a set of tasks with 95% confidence intervals."""

    tasks: int = Field(description="Tasks scored.")
    episodes: int = Field(description="Episodes scored.")
    errors: int = Field(description="Episodes that crashed (counted as unresolved).")
    pass1: Estimate = Field(
        description="Resolved share of episodes; Wilson interval on the design-effect-adjusted count."
    )
    pass_k: dict[int, Estimate] = Field(
        description="Mean unbiased pass@k over tasks, bootstrap-over-tasks interval, by k."
    )
    mean_reward: float = Field(description="Mean verifier reward over episodes.")


class Pins(BaseModel):
    """What exactly was measured; two results are comparable only if these agree."""

    suite: str = Field(description="Suite name or path as given.")
    suite_hash: str = Field(description="Hash of the tasks' content and their rendered prompts.")
    suite_version: str | None = Field(
        default=None,
        description="Version of a grown suite ('<dir>@v0002', `shadowrl bench grow`); None "
        "for a fixed one.",
    )
    harness_version: str = Field(
        description="Fingerprint of what the harness does (see `harness_version`)."
    )
    config_digest: str = Field(description="`Config.digest()` of the whole config tree.")
    config_sections: dict[str, str] = Field(description="Digest of each config section.")
    policy: str = Field(description="Human-readable description of the evaluated policy.")


class EvalResult(BaseModel):
    """Everything one evaluation run produced; serialised as `eval.json`."""

    pins: Pins = Field(description="What was measured.")
    samples: int = Field(description="Episodes per task.")
    tasks: list[TaskResult] = Field(description="Per-task outcomes, in suite order.")
    overall: Scores = Field(description="Scores over all tasks.")
    by_tier: dict[str, Scores] = Field(description="Scores per difficulty tier.")
    behaviour: Behaviour = Field(description="How the policy worked (tool use, edits, tokens).")
    wall_s: float = Field(description="Wall-clock seconds of the whole run.")
    created: str = Field(description="ISO-8601 time the run finished.")

    @property
    def errors(self) -> int:
        return self.overall.errors

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.model_dump_json(indent=1))

    @classmethod
    def load(cls, path: str | Path) -> EvalResult:
        """Read an eval.json, or the eval.json inside a run's eval directory."""
        path = Path(path)
        if path.is_dir():
            path = path / "eval.json"
        if not path.is_file():
            raise FileNotFoundError(f"no eval result at {path} (run `shadowrl eval` first)")
        return cls.model_validate_json(path.read_text())


def ks_for(samples: int) -> list[int]:
    """The k of pass@k worth reporting: 1, powers of two below `samples`, and `samples`."""
    ks = {1, samples}
    k = 2
    while k < samples:
        ks.add(k)
        k *= 2
    return sorted(ks)


def score(tasks: Sequence[TaskResult], *, seed: int = 0, resamples: int = 2000) -> Scores:
    """Pass@1 (Wilson over episodes, widened for correlation within a task's group) and
    pass@k (bootstrap over groups of tasks) of `tasks`."""
    counts = [t.counts for t in tasks]
    clusters = [t.cluster for t in tasks]
    n = sum(n for n, _ in counts)
    k_max = min(n for n, _ in counts)
    rewards = [s.reward for t in tasks for s in t.samples]
    return Scores(
        tasks=len(tasks),
        episodes=n,
        errors=sum(s.error is not None for t in tasks for s in t.samples),
        pass1=stats.clustered_wilson(_cluster_counts(counts, clusters)),
        pass_k={
            k: stats.pass_at_k_estimate(
                counts, k, seed=seed, resamples=resamples, clusters=clusters
            )
            for k in ks_for(k_max)
        },
        mean_reward=sum(rewards) / len(rewards),
    )


def _cluster_counts(
    counts: Sequence[tuple[int, int]], clusters: Sequence[str]
) -> list[tuple[int, int]]:
    """`(n, c)` summed per cluster, in first-seen order."""
    summed: dict[str, tuple[int, int]] = {}
    for (n, c), key in zip(counts, clusters, strict=True):
        m, k = summed.get(key, (0, 0))
        summed[key] = (m + n, k + c)
    return list(summed.values())


def score_by_tier(
    tasks: Sequence[TaskResult], *, seed: int = 0, resamples: int = 2000
) -> dict[str, Scores]:
    """`score` of each tier's tasks."""
    groups = stats.by_tier([t.tier for t in tasks], tasks)
    return {tier: score(group, seed=seed, resamples=resamples) for tier, group in groups.items()}
