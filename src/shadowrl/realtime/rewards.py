"""Production signals → one reward per session: the mapping, as pure functions.

What users do with the agent's work is the only label production has. Cursor's Tab
rewards an accepted suggestion, penalises a rejected one and treats silence as
nothing; Composer watches whether edits persist (kept lines, reverts) and whether
the user comes back dissatisfied. One session's raw signals (`serve/store` keeps
them as facts) become one reward here, as a weighted sum of terms:

    decision   accept → +accept, reject → reject           (the last one counts)
    keep       keep · (2·value − 1): all lines kept → +keep, none → −keep (last value)
    revert     revert, once if the user reverted at all
    thumbs     thumbs_up / thumbs_down                      (the last one counts)
    follow-ups followup_dissatisfied / followup_satisfied   (each one counts)

A session with no signal but `silent` carries no label (`Reward.value is None`): it
is left out of training and counted. Scored 0 instead, under mean-centring it would
earn a positive advantage whenever most sessions are rejected.

Two reward hacks seen in production must not pay:

* ending a session with a broken or malformed tool call, so the user has nothing
  to reject: such a session is worth at most a rejected one (`reject`), and a silent
  one is scored exactly that instead of being left out;
* asking a needless clarifying question instead of acting: counted as a rate
  (`clarifying_rate`) that the gate's alarms watch; `clarify` optionally adds a
  penalty per session that asks one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from shadowrl.serve.store.signals import DECISIONS, THUMBS


class RewardConfig(BaseModel):
    """Weights of each signal's term in a session's reward (see `realtime/rewards.py`)."""

    model_config = ConfigDict(extra="forbid")
    accept: float = Field(1.0, description="Reward of an accepted session (Tab-style +).")
    reject: float = Field(
        -1.0,
        description="Reward of a rejected session (Tab-style −); also the cap of a session "
        "that ends on a broken tool call.",
    )
    keep: float = Field(
        1.0,
        ge=0,
        description="Weight of the kept-lines fraction v: the term is keep·(2v − 1).",
    )
    revert: float = Field(-1.0, description="Added once when the user reverted the edits.")
    thumbs_up: float = Field(0.5, description="Added for a thumbs up (the last thumb counts).")
    thumbs_down: float = Field(-0.5, description="Added for a thumbs down.")
    followup_dissatisfied: float = Field(
        -0.5, description="Added per dissatisfied follow-up message."
    )
    followup_satisfied: float = Field(0.0, description="Added per satisfied follow-up message.")
    clarify: float = Field(
        0.0,
        le=0,
        description="Added when the agent asked a clarifying question instead of acting "
        "(0: only tracked as a rate, which the gate's alarms watch).",
    )
    silent: float | None = Field(
        None,
        description="Reward of a session with no signal; None: unlabeled, left out of "
        "training and counted.",
    )


@dataclass(frozen=True)
class Conduct:
    """What the agent did in a session, as far as rewards care."""

    broken_end: bool = False  # the last reply held a malformed / failed tool call
    clarifying: bool = False  # it asked the user a question and made no edit
    edited: bool = True  # it made at least one edit


@dataclass(frozen=True)
class Signal:
    """One raw feedback row: its kind and, for `keep`, the kept fraction."""

    kind: str
    value: float | None = None


@dataclass(frozen=True)
class Reward:
    """One session's reward; `value` None means unlabeled (silent, left out)."""

    value: float | None
    capped: bool = False  # a broken-tool-call session held to the rejected reward


def signal_terms(signals: Sequence[Signal], cfg: RewardConfig) -> list[float]:
    """The weighted terms of a session's signals (empty: no label at all)."""
    terms: list[float] = []
    decisions = [s.kind for s in signals if s.kind in DECISIONS]
    if decisions:
        terms.append(cfg.accept if decisions[-1] == "accept" else cfg.reject)
    keeps = [s.value for s in signals if s.kind == "keep" and s.value is not None]
    if keeps:
        terms.append(cfg.keep * (2.0 * keeps[-1] - 1.0))
    if any(s.kind == "revert" for s in signals):
        terms.append(cfg.revert)
    thumbs = [s.kind for s in signals if s.kind in THUMBS]
    if thumbs:
        terms.append(cfg.thumbs_up if thumbs[-1] == "thumbs_up" else cfg.thumbs_down)
    for s in signals:
        if s.kind == "followup_dissatisfied":
            terms.append(cfg.followup_dissatisfied)
        elif s.kind == "followup_satisfied":
            terms.append(cfg.followup_satisfied)
    return terms


def session_reward(signals: Sequence[Signal], conduct: Conduct, cfg: RewardConfig) -> Reward:
    """The reward of one session (the mapping in the module docstring)."""
    terms = signal_terms(signals, cfg)
    if not terms and cfg.silent is not None:
        terms = [cfg.silent]
    if not terms:
        # a silent session that ended broken is scored as rejected, never left out
        return Reward(cfg.reject, capped=True) if conduct.broken_end else Reward(None)
    value = sum(terms) + (cfg.clarify if conduct.clarifying else 0.0)
    if conduct.broken_end and value > cfg.reject:
        return Reward(cfg.reject, capped=True)
    return Reward(value)


@dataclass(frozen=True)
class RewardSummary:
    """Counts and rates over one cycle's sessions (what `cycles.jsonl` and alarms read)."""

    sessions: int
    labeled: int
    silent: int
    capped: int
    accepted: int
    rejected: int
    reward_mean: float | None
    accept_rate: float | None  # accepts / sessions with a decision
    clarifying_rate: float
    broken_rate: float
    no_edit_rate: float


def summarize(
    signals: Sequence[Sequence[Signal]], conducts: Sequence[Conduct], rewards: Sequence[Reward]
) -> RewardSummary:
    """Aggregate per-session signals, conduct and rewards (equal lengths)."""
    n = len(rewards)
    if not len(signals) == len(conducts) == n:
        raise ValueError("signals, conducts and rewards differ in length")
    labeled = [r.value for r in rewards if r.value is not None]
    last = [next((s.kind for s in reversed(ss) if s.kind in DECISIONS), None) for ss in signals]
    accepted, rejected = last.count("accept"), last.count("reject")

    def rate(k: int) -> float:
        return k / n if n else 0.0

    return RewardSummary(
        sessions=n,
        labeled=len(labeled),
        silent=n - len(labeled),
        capped=sum(r.capped for r in rewards),
        accepted=accepted,
        rejected=rejected,
        reward_mean=sum(labeled) / len(labeled) if labeled else None,
        accept_rate=accepted / (accepted + rejected) if accepted + rejected else None,
        clarifying_rate=rate(sum(c.clarifying for c in conducts)),
        broken_rate=rate(sum(c.broken_end for c in conducts)),
        no_edit_rate=rate(sum(not c.edited for c in conducts)),
    )
