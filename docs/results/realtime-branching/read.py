"""Branching pilots' readout (README.md), from the run's committed cycles.jsonl and users.jsonl
(and branch_judged.jsonl where the run kept it).

    python docs/results/realtime-branching/read.py docs/results/realtime-branching/pilot1

The share of branch groups with contrast and its Wilson 95 % interval; beside it the
share a group of n labeled members would show from the `reaction` judge's noise alone
when every member's verdict before noise is the same (flip, then follow-up after a
reject: two reward values for a reject, a continuous one for an accept), at the users'
flip and follow-up rates; G (tokens the continuations generated per cycle) and t (tokens
per session); pass share and the preference's bite. A run without branching (the arms'
whole-session arm) prints only the last three. A train stage stopped and redone judges its
groups again: the last judgement of each member is the one that stands.
"""

import json
import sys
from collections import Counter
from pathlib import Path

from shadowrl.eval.stats import wilson_interval

FLIP, FOLLOWUP = 0.1, 0.3  # realtime.users defaults, as the pilot ran them


def noise_only(n: int) -> float:
    """P(contrast) for n labeled members whose verdicts before noise are all 'reject'."""
    unflipped = 1 - FLIP
    return 1 - (unflipped * (1 - FOLLOWUP)) ** n - (unflipped * FOLLOWUP) ** n


def verdict_groups(labeled: list[dict]) -> dict[tuple[str, int], list[bool]]:
    """The labeled judgements' verdicts before noise, by group (a session's branch turn)."""
    groups: dict[tuple[str, int], list[bool]] = {}
    for j in labeled:
        groups.setdefault((j["session_id"], j["turn"]), []).append(j["accepted"])
    return groups


def last_judgements(path: Path) -> list[dict]:
    """Each labeled member's last judgement (a redone train stage judges its groups again)."""
    last = {}
    for line in path.open():
        j = json.loads(line)
        last[j["session_id"], j["turn"], j["index"]] = j
    return [j for j in last.values() if j["reward"] is not None]


def main(run: Path) -> None:
    rows = [json.loads(line) for line in (run / "cycles.jsonl").open()]
    users = [json.loads(line) for line in (run / "users.jsonl").open()]
    users = [u for u in users if int(u["user"][1:4]) <= len(rows)]  # "c001-u000": cycle 1
    g = branch_groups(run, rows) if all("branching" in r for r in rows) else None
    t = sum(u["tokens"] for u in users) / len(users)
    print(
        f"t {t:.0f} tokens a session"
        if g is None
        else f"G {g:.0f} tokens a cycle, t {t:.0f} tokens a session, G/t {g / t:.1f}"
    )
    passed = [u for u in users if u["resolved"]]
    bit = sum(r["preference"]["rejected_by_preference"] for r in rows)
    print(
        f"sessions {len(users)}, resolved {len(passed)} ({len(passed) / len(users):.2f}), "
        f"rejected by the preference alone {bit} ({bit / max(1, len(passed)):.2f} of passing)"
    )
    print("minutes per cycle:", [round(r["cycle_s"] / 60, 1) for r in rows])


def branch_groups(run: Path, rows: list[dict]) -> float:
    """Prints the branch groups' contrast; returns G, continuation tokens a cycle."""
    b = [r["branching"] for r in rows]
    groups, contrast = sum(x["groups"] for x in b), sum(x["with_contrast"] for x in b)
    ci = wilson_interval(contrast, groups)
    print(
        f"{len(rows)} cycles: {contrast} of {groups} groups with contrast = "
        f"{contrast / groups:.2f}, Wilson 95 % [{ci.low:.2f}, {ci.high:.2f}]"
    )
    for k in (
        "negative",
        "points",
        "faithful",
        "unfaithful",
        "continuations",
        "unlabeled",
        "recorded",
        "generated",
    ):
        print(f"  {k}: {[x[k] for x in b]} (sum {sum(x[k] for x in b)})")
    members = sum(x["continuations"] - x["unlabeled"] + x["recorded"] for x in b) / groups
    print(
        f"  members per group {members:.2f}; noise alone gives contrast "
        f"{noise_only(3):.2f} / {noise_only(4):.2f} / {noise_only(5):.2f} at n = 3 / 4 / 5"
    )
    judged = run / "branch_judged.jsonl"  # runs since 2026-12-06 04:40 UTC keep it
    if judged.exists():
        labeled = last_judgements(judged)
        by_group = verdict_groups(labeled)
        # a group of two or more labeled members: do their verdicts differ?
        clean = [len(set(v)) > 1 for v in by_group.values() if len(v) >= 2]
        ci = wilson_interval(sum(clean), len(clean))
        print(
            f"  groups whose verdicts before noise differ: {sum(clean)} of {len(clean)}, "
            f"Wilson 95 % [{ci.low:.2f}, {ci.high:.2f}]"
        )
        for key in ("resolved", "accepted"):  # 'resolved': logged since 8087f5b
            if any(key not in j for j in labeled):
                continue
            n = sum(bool(j[key]) for j in labeled)
            print(f"  judgements {key}: {n} of {len(labeled)}")
        turns = Counter(turn for _, turn in by_group)
        print(f"  groups by branch turn: {dict(sorted(turns.items()))}")
    return sum(x["generated"] for x in b) / len(b)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
