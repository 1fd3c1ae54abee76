"""The family's templates and splits, without running pytest: fast, structural checks."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from shadowrl.tasks.family.catalog import TEMPLATES, by_id, templates
from shadowrl.tasks.family.generate import bug_outcomes, cases
from shadowrl.tasks.family.splits import PARTS, group_part, site, template_part
from shadowrl.tasks.family.suite import SuiteName
from shadowrl.tasks.family.template import Template
from shadowrl.tasks.mutate import mutants
from shadowrl.tasks.task import Seed, Task, stratified


def test_enough_templates_to_hold_out_thirty() -> None:
    parts = Counter(template_part(t.id) for t in TEMPLATES)
    assert len(by_id()) == len(TEMPLATES) >= 60
    assert parts["heldout-templates"] >= 30 and parts["dev"] >= 5 and parts["train"] >= 20
    seeds = {t.id for t in templates("heldout-seeds")}
    train = {t.id for t in templates("train")}
    assert len(seeds) >= 20 and seeds <= train  # held-out seeds come from train templates


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.id)
def test_template_renders_runs_and_has_bugs(template) -> None:  # type: ignore[no-untyped-def]
    r = random.Random(0)
    source = template.render(r).source
    assert 10 <= len(source.splitlines()) <= 60
    found = cases(template, source, r)
    assert len(found) >= 8, "too few distinct testable calls"
    assert len({c.expected for c in found}) >= 2, "every call has one answer"
    assert len(list(mutants(source))) >= 5


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.id)
def test_sites_name_the_same_node_in_every_rendering(template) -> None:  # type: ignore[no-untyped-def]
    """A near-duplicate group (site, operator) must not depend on the placeholders,
    or two renderings of one bug could land in two parts."""
    groups = []
    for seed in range(4):
        source = template.render(random.Random(seed)).source
        groups.append(sorted({(site(source, m), m.operator) for m, _ in mutants(source)}))
    assert all(g == groups[0] for g in groups)


def test_a_group_has_one_part_and_held_out_templates_lend_nothing() -> None:
    for template in TEMPLATES:
        home = template_part(template.id)
        source = template.render(random.Random(1)).source
        for m, _ in mutants(source):
            part = group_part(template.id, site(source, m), m.operator)
            assert part == home or (home == "train" and part == "heldout-seeds")
    seeds = [
        group_part(t.id, site(s, m), m.operator)
        for t in templates("train")
        for s in [t.render(random.Random(2)).source]
        for m, _ in mutants(s)
    ]
    assert 0.1 < seeds.count("heldout-seeds") / len(seeds) < 0.4


def test_prescreen_sees_a_broken_call_and_a_hang() -> None:
    template = by_id()["clock_arithmetic"]
    source = template.render(random.Random(0)).source
    found = cases(template, source, random.Random(0))
    broken = source.replace("total % 60", "total % 61")
    outcomes = bug_outcomes(broken, found)
    assert outcomes is not None and any(
        o != c.expected for o, c in zip(outcomes, found, strict=True)
    )
    assert bug_outcomes(source + "\nwhile True:\n    pass\n", found) is None


def test_suite_names() -> None:
    assert SuiteName.parse("family") == SuiteName("dev", 48)
    assert SuiteName.parse("family:heldout-templates@64") == SuiteName("heldout-templates", 64)
    assert SuiteName.parse("family:train") == SuiteName("train", 200)
    for other in ("easy", "family:bogus", "family:dev@x", "familyx:dev", "family/x.jsonl"):
        assert SuiteName.parse(other) is None
    listed = SuiteName.parse("family:train@8/bank_ledger,reorder_point")
    assert listed == SuiteName("train", 8, ("bank_ledger", "reorder_point"))
    assert [t.id for t in listed.pool()] == ["bank_ledger", "reorder_point"]
    assert listed.file_name(0) != SuiteName("train", 8).file_name(0)
    assert SuiteName.parse("family:train@8/") is None
    with pytest.raises(ValueError, match="not_a_template"):
        SuiteName("train", 8, ("not_a_template",)).pool()
    assert set(PARTS) == {"train", "dev", "heldout-seeds", "heldout-templates"}


def _task(i: int, repo: str) -> Task:
    seed = Seed(path="/nonexistent")
    return Task(instance_id=f"t{i}", repo=repo, problem_statement="", patch="",
                FAIL_TO_PASS=("x",), seed=seed)  # fmt: skip


def test_stratified_takes_every_source_before_a_second_task_of_one() -> None:
    tasks = [_task(i, repo) for i, repo in enumerate("aaaabbbc")]
    picked = stratified(tasks, 4)
    assert [t.instance_id for t in picked] == ["t0", "t1", "t4", "t7"]  # file order kept
    assert stratified(tasks, 0) == tasks and stratified(tasks, None) == tasks
    own = [_task(i, f"r{i}") for i in range(6)]
    assert stratified(own, 3) == own[:3]  # one task per source: the first N, as before


def test_a_bug_that_hard_coding_the_report_fixes_is_rejected() -> None:
    """A recursive function whose bug lives in its base case: hard-coding the base case's
    call fixes every call, so that report must not be made; another call's can."""
    from shadowrl.tasks.family.generate import _beats_hard_coding

    factorial = Template(
        id="t_factorial",
        module="fact",
        source="def f(n):\n    if n == 0:\n        return 1\n    return n * f(n - 1)\n",
        cases=lambda r: [("f", (n,)) for n in (0, 3, 5)],
    )
    found = cases(factorial, factorial.source, random.Random(0))
    bug = factorial.source.replace("return 1", "return 2")
    base, three = found[0], found[1]
    assert not _beats_hard_coding(bug, base, found)
    assert _beats_hard_coding(bug, three, found)


def test_hard_coding_a_date_argument_imports_what_its_literal_names() -> None:
    from shadowrl.tasks.family.adversary import hard_code

    source = 'def nights(a, b):\n    """Nights between two dates."""\n    return (b - a).days + 1\n'
    call = "nights(datetime.date(2024, 6, 1), datetime.date(2024, 6, 4))"
    guarded = hard_code(source, "nights", call, "return 3")
    namespace: dict[str, object] = {}
    exec(guarded, namespace)  # the hard-coded call must answer, not raise a NameError
    assert eval(call, {**namespace, "datetime": __import__("datetime")}) == 3
