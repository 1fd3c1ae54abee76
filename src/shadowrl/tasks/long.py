"""The `long` tier: bugs whose fix needs more than a 2,048-token context can hold at once.

Each task is a small rules package. `docs/SPEC.md` states every rule in prose (the
one fact the fix needs is buried among the others); `app/<module>.py` implements them,
one rule with a wrong constant; near-misses point elsewhere: `app/legacy_<module>.py`
(the retired v1 rules, whose value the bug uses) and `docs/CHANGELOG.md` (which names
that old value too). The issue names the misbehaving rule but not the file or the
value. The spec and the module each fit the tier's context alone, never together with
the prompt: an agent must carry the spec's fact across a summary (issue 21). The
visible tests check other rules; the hidden test checks the buggy rule at its
boundary. Generated deterministically (`build_long`); seeds are committed under
`data/suites/long/`, and `shadowrl tasks validate --suite long` checks gold 100 %,
noop 0 % like every suite.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from shadowrl.tasks.patch import make_patch
from shadowrl.tasks.task import SUITES_DIR, Seed, Task, hash_split, save_tasks

SEEDS_DIR = SUITES_DIR / "long"
TEST_CMD = ("python", "-m", "pytest", "-p", "no:cacheprovider")

# (module, the thing it prices, its unit); one domain per task.
DOMAINS = (
    ("pricing", "order", "cents"), ("shipping", "parcel", "grams"), ("loyalty", "member", "points"),
    ("refunds", "refund", "cents"), ("payroll", "shift", "minutes"), ("rentals", "booking", "hours"),
    ("tickets", "ticket", "cents"), ("library", "loan", "days"), ("energy", "meter", "kwh"),
    ("parking", "stay", "minutes"), ("grading", "exam", "marks"), ("insurance", "claim", "cents"),
    ("storage", "locker", "days"), ("catering", "event", "guests"), ("fitness", "session", "minutes"),
)  # fmt: skip
RULES = (
    "bulk_discount", "late_penalty", "weekend_surcharge", "member_bonus", "small_fee",
    "night_rate", "early_credit", "peak_levy", "volume_rebate", "service_charge",
)  # fmt: skip
PROSE = (
    "This rule was agreed with the finance team and is audited every quarter.",
    "Support staff quote this rule to customers, so it must match to the unit.",
    "The threshold is inclusive: an amount equal to it already qualifies.",
    "Amounts are whole numbers; the result is rounded down, never up.",
    "Partners integrate against this rule directly, through the public API.",
)


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


@dataclass(frozen=True)
class Rule:
    """`name(x) = x * rate // 100 if x >= threshold else 0`."""

    name: str
    threshold: int
    rate: int

    def value(self, x: int) -> int:
        return x * self.rate // 100 if x >= self.threshold else 0

    def code(self, unit: str, noun: str) -> str:
        return (
            f"def {self.name}(amount: int) -> int:\n"
            f'    """{self.name.replace("_", " ").capitalize()} of {_a(noun)} of `amount` {unit}."""\n'
            f"    if amount >= {self.threshold}:\n"
            f"        return amount * {self.rate} // 100\n"
            "    return 0\n"
        )

    def prose(self, unit: str, noun: str, rng: random.Random) -> str:
        title = self.name.replace("_", " ").capitalize()
        return (
            f"### {title}\n\n{_a(noun).capitalize()} of at least {self.threshold} {unit} gets a {title.lower()} "
            f"of {self.rate} percent of its amount; below {self.threshold} {unit} it gets none. "
            f"{rng.choice(PROSE)} {rng.choice(PROSE)}\n"
        )


@dataclass(frozen=True)
class LongCase:
    """One generated task before it becomes files: the rules, the bug, the near-miss."""

    module: str
    noun: str
    unit: str
    rules: tuple[Rule, ...]
    bug: int  # index of the rule whose threshold is wrong
    legacy_threshold: int  # the v1 value the bug uses

    @property
    def instance_id(self) -> str:
        return f"long__{self.module}-{self.rules[self.bug].name}"

    def buggy_rules(self) -> tuple[Rule, ...]:
        wrong = Rule(self.rules[self.bug].name, self.legacy_threshold, self.rules[self.bug].rate)
        return tuple(wrong if i == self.bug else r for i, r in enumerate(self.rules))


def make_case(index: int, rng: random.Random) -> LongCase:
    module, noun, unit = DOMAINS[index]
    names = rng.sample(RULES, len(RULES))
    rules = tuple(Rule(n, rng.randrange(10, 90) * 50, rng.randrange(3, 40)) for n in names)
    bug = rng.randrange(len(rules))
    legacy = rules[bug].threshold + rng.choice((-1, 1)) * rng.randrange(2, 8) * 50
    return LongCase(module, noun, unit, rules, bug, legacy)


def module_source(case: LongCase, rules: tuple[Rule, ...], legacy: bool = False) -> str:
    head = (
        f'"""Retired v1 {case.module} rules, kept for old API clients; not used by the app."""\n'
        if legacy
        else f'"""The {case.module} rules of the app; docs/SPEC.md is the source of truth."""\n'
    )
    return head + "".join(f"\n\n{r.code(case.unit, case.noun)}" for r in rules)


def spec(case: LongCase, rng: random.Random) -> str:
    body = "".join("\n" + r.prose(case.unit, case.noun, rng) for r in case.rules)
    return (
        f"# {case.module.capitalize()} specification (v2)\n\nEvery rule below applies to one "
        f"{case.noun}; amounts are in {case.unit}. Where the code disagrees, this document "
        f"wins.\n{body}"
    )


def changelog(case: LongCase) -> str:
    rule = case.rules[case.bug]
    return (
        f"# Changelog\n\n## v2.0\n\n- Rules rewritten for the v2 API; v1 kept in "
        f"`app/legacy_{case.module}.py`.\n- `{rule.name}`: in v1 the threshold was "
        f"{case.legacy_threshold} {case.unit}.\n\n## v1.3\n\n- Rounding is always down.\n"
    )


def visible_test(case: LongCase) -> str:
    others = [r for i, r in enumerate(case.rules) if i != case.bug][:3]
    lines = [f"from app.{case.module} import {', '.join(r.name for r in others)}\n"]
    for r in others:
        lines.append(
            f"\n\ndef test_{r.name}():\n"
            f"    assert {r.name}({r.threshold}) == {r.value(r.threshold)}\n"
            f"    assert {r.name}({r.threshold - 1}) == 0\n"
        )
    return "".join(lines)


def hidden_test(case: LongCase) -> str:
    r = case.rules[case.bug]
    probes = sorted({r.threshold - 1, r.threshold, case.legacy_threshold, r.threshold + 50})
    asserts = "".join(f"    assert {r.name}({x}) == {r.value(x)}\n" for x in probes)
    return f"from app.{case.module} import {r.name}\n\n\ndef test_{r.name}_spec():\n{asserts}"


def statement(case: LongCase) -> str:
    r = case.rules[case.bug]
    return (
        f"Some {case.noun}s get the wrong {r.name.replace('_', ' ')} from `{r.name}`: the app "
        f"does not follow `docs/SPEC.md`, the specification of every rule. Find the rule's "
        f"implementation and make it match the specification."
    )


def write_case(case: LongCase, root: Path, rng: random.Random) -> Task:
    """The seed (fixed code) under `root/<id>`, and the task that breaks and grades it."""
    seed = root / case.instance_id
    shutil.rmtree(seed, ignore_errors=True)
    app = f"app/{case.module}.py"
    files = {
        "app/__init__.py": "",
        app: module_source(case, case.rules),
        f"app/legacy_{case.module}.py": module_source(case, case.buggy_rules(), legacy=True),
        "docs/SPEC.md": spec(case, rng),
        "docs/CHANGELOG.md": changelog(case),
        f"test_{case.module}.py": visible_test(case),
    }
    for path, text in files.items():
        (seed / path).parent.mkdir(parents=True, exist_ok=True)
        (seed / path).write_text(text)
    buggy = module_source(case, case.buggy_rules())
    hidden = f"test_{case.module}_spec.py"
    visible = [
        f"test_{case.module}.py::test_{r.name}" for r in case.rules if r is not case.rules[case.bug]
    ]
    return Task(
        instance_id=case.instance_id,
        repo=f"shadowrl/long-{case.module}",
        problem_statement=statement(case),
        patch=make_patch({app: buggy}, {app: files[app]}),
        test_patch=make_patch({hidden: None}, {hidden: hidden_test(case)}),
        bug_patch=make_patch({app: files[app]}, {app: buggy}),
        FAIL_TO_PASS=(f"{hidden}::test_{case.rules[case.bug].name}_spec",),
        PASS_TO_PASS=tuple(visible[:3]),
        seed=Seed(path=f"long/{case.instance_id}"),
        tier="long",
        source="synthetic-rules",
        split=hash_split(case.instance_id),
        test_cmd=TEST_CMD,
        timeout_s=60.0,
    )


def build_long(root: Path = SEEDS_DIR, *, n: int = len(DOMAINS), rng_seed: int = 0) -> list[Task]:
    """Generate the tier's seeds under `root` and write `data/suites/long.jsonl`."""
    rng = random.Random(rng_seed)
    tasks = [write_case(make_case(i, rng), root, rng) for i in range(n)]
    save_tasks(tasks, root.parent / "long.jsonl")
    return tasks
