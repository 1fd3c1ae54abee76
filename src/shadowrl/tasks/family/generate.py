"""One instance of the family: a rendered template, one injected bug, a report, tests.

    template ──render(rng)──► correct module ──mutants (tasks/mutate.py)──► one bug whose
        near-duplicate group (template, site, operator) belongs to the asked part
    calls drawn by the template ──► expected = what the correct module returns
        ──► the bug's outcomes (a subprocess with a time limit) ──► failing calls
    report: one failing call, what it did and should do; hidden tests: every call but
    the visible ones, which are three calls the bug does not break
        ──► gold and bug `ruff format`ted (a mutant's node is re-spelled by ast.unparse)
        ──► tasks/make.holds: FAIL_TO_PASS fail and PASS_TO_PASS pass on the bug, all
            pass on the gold module, run by id the way the grader runs them ──► Task

A bug must break at least two calls: the hidden tests then hold a failing input beyond
the reported one, so a fix that special-cases the report earns nothing. The workspace
is the family seed (a README) plus `bug_patch`, which writes the buggy module and its
visible tests, so a record is self-contained.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from shadowrl import pyast
from shadowrl.tasks.diffrules import check_file, inside_dunders
from shadowrl.tasks.family.adversary import hard_code
from shadowrl.tasks.family.report import statement
from shadowrl.tasks.family.splits import Part, group_part, site
from shadowrl.tasks.family.template import Call, Case, Outcome, Template, literal, run_calls
from shadowrl.tasks.make import Job, MakeSpec, holds
from shadowrl.tasks.mutate import ALL_OPERATORS, Mutation, mutants
from shadowrl.tasks.patch import make_patch
from shadowrl.tasks.prepare import apply_patch_to_dir
from shadowrl.tasks.task import SUITES_DIR, Seed, Task

SEED_DIR = SUITES_DIR / "family"  # the workspace before `bug_patch`: a README
VISIBLE = 3  # visible example tests, all passing on the bug
TIMEOUT_S = 30.0
PRESCREEN_S = 5.0  # a bug that loops forever is dropped here, before any pytest run
_DRIVER = """
import json, sys, builtins, datetime
from decimal import Decimal
job = json.loads(sys.stdin.read())
ns = {"__name__": "family_module"}
exec(compile(job["source"], "<bug>", "exec"), ns)
out = []
for name, args in job["calls"]:
    try:
        value = ns[name](*eval(args, {"datetime": datetime, "Decimal": Decimal}))
        out.append(["value", repr(value)])
    except Exception as e:
        out.append(["raises", type(e).__name__])
sys.stdout.write("\\n@@" + json.dumps(out))
"""


@dataclass(frozen=True)
class Instance:
    """One generated task and the facts its split and the stream read."""

    task: Task
    template: str  # template id (also `task.repo` without its `family/` prefix)
    site: str  # `function/ast.path` of the bug
    operator: str  # the mutation operator
    part: Part
    bug_key: str  # digest of the buggy module: equal keys are the same bug

    @property
    def group(self) -> tuple[str, str, str]:
        """The near-duplicate group: never split across parts."""
        return self.template, self.site, self.operator


def cases(template: Template, source: str, rng: random.Random) -> list[Case]:
    """The template's drawn calls with literal arguments and results, without repeats."""
    drawn: dict[str, tuple[Call, str]] = {}
    for call in template.cases(rng):
        args = literal(tuple(call[1]))
        if args is not None:
            drawn.setdefault(f"{call[0]}{args}", (call, args))
    found = run_calls(source, [c for c, _ in drawn.values()])
    return [
        Case(call, args, out)
        for (call, args), out in zip(drawn.values(), found, strict=True)
        if out is not None
    ]


def bug_outcomes(mutated: str, found: Sequence[Case]) -> list[Outcome] | None:
    """What the buggy module does with each call (None: it did not finish in time)."""
    return call_outcomes(mutated, [(c.call[0], c.args) for c in found])


def call_outcomes(source: str, calls: Sequence[tuple[str, str]]) -> list[Outcome] | None:
    """What untrusted `source` does with each (function, literal argument tuple) call, run in
    a subprocess with a time limit (None: it did not finish in time or did not load)."""
    job = json.dumps({"source": source, "calls": [list(c) for c in calls]})
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", _DRIVER],
            input=job,
            capture_output=True,
            text=True,
            timeout=PRESCREEN_S,
        )
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0 or "\n@@" not in proc.stdout:
        return None
    rows = json.loads(proc.stdout.rsplit("\n@@", 1)[1])
    return [Outcome(raises=v) if k == "raises" else Outcome(value=v) for k, v in rows]


def test_file(module: str, found: Sequence[Case], prefix: str) -> str:
    """A pytest file with one test per case, named `test_<function>_<prefix><n>`."""
    names = sorted({c.call[0] for c in found})
    head = (
        "import datetime  # noqa: F401\nfrom decimal import Decimal  # noqa: F401\n\n"
        f"import pytest  # noqa: F401\n\nfrom {module} import {', '.join(names)}\n"
    )
    body = [
        f"\n\ndef {test_name(c, prefix, i)}():\n"
        + (
            f"    with pytest.raises({c.expected.raises}):\n        {c.text}\n"
            if c.expected.raises
            else f"    assert {c.text} == {c.expected.value}\n"
        )
        for i, c in enumerate(found, 1)
    ]
    return head + "".join(body)


def test_name(case: Case, prefix: str, i: int) -> str:
    return f"test_{case.call[0]}_{prefix}{i}"


def _bug(
    template: Template,
    source: str,
    part: Part,
    rng: random.Random,
    operators: Sequence[str] = ALL_OPERATORS,
) -> tuple[Mutation, str, str] | None:
    """(mutation, buggy module, site) of one bug of `part` by `operators`, drawn uniformly."""
    eligible = []
    for m, mutated in mutants(source, operators):
        where = site(source, m)
        if group_part(template.id, where, m.operator) == part:
            eligible.append((m, mutated, where))
    return rng.choice(eligible) if eligible else None


def _beats_hard_coding(mutated: str, reported: Case, found: Sequence[Case]) -> bool:
    """True if the bug with the reported call hard-coded (`adversary.hard_code`) still
    breaks a call: a recursive or shared helper could otherwise carry the fix to them all."""
    want = reported.expected
    outcome = f"raise {want.raises}('special case')" if want.raises else f"return {want.value}"
    guarded = hard_code(mutated, reported.call[0], reported.text, outcome)
    after = bug_outcomes(guarded, found)
    return after is not None and any(o != c.expected for o, c in zip(after, found, strict=True))


def formatted(source: str) -> str:
    """`source` as `ruff format` writes it: a mutant's node is re-spelled by `ast.unparse`
    (quotes, spacing), and formatting gold and bug alike leaves no such tell."""
    from ruff import find_ruff_bin

    argv = [find_ruff_bin(), "format", "--isolated", "--stdin-filename", "m.py", "-"]
    proc = subprocess.run(argv, input=source, capture_output=True, text=True, check=True)
    return proc.stdout


def attempt(
    template: Template,
    part: Part,
    rng: random.Random,
    python: Path,
    seen: Collection[str] = (),
    operators: Sequence[str] = ALL_OPERATORS,
) -> Instance | None:
    """One try at an instance of `template` in `part` whose bug one of `operators` makes
    (None: this draw made no valid task, or its bug's key is in `seen`)."""
    source = template.render(rng).source
    bug = _bug(template, source, part, rng, operators)
    if bug is None:
        return None
    mutation, mutated, where = bug
    if module_key(mutated) in seen:  # before the subprocesses: a used-up template is cheap
        return None
    found = cases(template, source, rng)
    outcomes = bug_outcomes(mutated, found)
    if outcomes is None:
        return None
    failing = [c for c, o in zip(found, outcomes, strict=True) if o != c.expected]
    passing = [c for c, o in zip(found, outcomes, strict=True) if o == c.expected]
    if len(failing) < 2:
        return None
    visible = rng.sample(passing, min(VISIBLE, len(passing)))
    hidden = [c for c in found if c not in visible]
    reported = rng.choice(failing)
    if not _beats_hard_coding(mutated, reported, found):
        return None
    code = Code(template.module, formatted(source), formatted(mutated), mutation.operator)
    if code.key in seen:  # formatting changed more than spelling: checked again
        return None
    task = _task(template, code, visible, hidden, failing)
    if not _holds(task, code, python):
        return None
    got = outcomes[found.index(reported)]
    return _instance(
        template, part, task, code, where, statement(template.module, reported, got, rng)
    )


@dataclass(frozen=True)
class Code:
    """The module of one instance, correct and buggy, as the workspace holds them."""

    module: str  # stem
    gold: str
    bug: str
    operator: str

    @property
    def path(self) -> str:
        return f"{self.module}.py"

    @property
    def key(self) -> str:
        """The buggy module's digest: two instances with one key are the same bug."""
        return module_key(self.bug)

    @property
    def tests(self) -> tuple[str, str]:
        """(visible test file, hidden test file)."""
        return f"test_{self.module}.py", f"test_{self.module}_cases.py"


def module_key(source: str) -> str:
    """The digest of a module's syntax tree: the same before and after `formatted`, which
    only re-spells, so a bug is known as seen before it is formatted, validated and run."""
    return hashlib.sha256(ast.dump(pyast.parse(source)).encode()).hexdigest()[:12]


def _task(
    template: Template,
    code: Code,
    visible: Sequence[Case],
    hidden: Sequence[Case],
    failing: Sequence[Case],
) -> Task:
    """The record, FAIL_TO_PASS as the prescreen found them (checked by `_holds`)."""
    visible_file, hidden_file = code.tests
    files = {visible_file: test_file(code.module, visible, "example_")} if visible else {}
    hidden_text = test_file(code.module, hidden, "")
    vis_ids = [f"{visible_file}::{test_name(c, 'example_', i)}" for i, c in enumerate(visible, 1)]
    ids = {c: f"{hidden_file}::{test_name(c, '', i)}" for i, c in enumerate(hidden, 1)}
    return Task(
        instance_id="pending",
        repo=f"family/{template.id}",
        problem_statement="pending",
        patch=make_patch({code.path: code.bug}, {code.path: code.gold}),
        test_patch=make_patch({hidden_file: None}, {hidden_file: hidden_text}),
        FAIL_TO_PASS=tuple(ids[c] for c in hidden if c in failing),
        PASS_TO_PASS=(*vis_ids, *(ids[c] for c in hidden if c not in failing)),
        bug_patch=_bug_patch(code.path, code.bug, files),
        seed=Seed(path=str(SEED_DIR)),
        tier="family",
        timeout_s=TIMEOUT_S,
        allowed_primitives=tuple(
            sorted(
                {v.rule for v in check_file(code.path, code.bug, code.gold)}
                | inside_dunders(code.bug, code.gold)
            )
        ),
    )


def _holds(task: Task, code: Code, python: Path) -> bool:
    """make.holds, the check of every generated suite, on the buggy workspace."""
    spec = MakeSpec(seed=task.seed, repo=task.repo, timeout_s=TIMEOUT_S)
    job = Job(spec, SEED_DIR, python, code.path, (), code.tests, frozenset(), TIMEOUT_S)
    with tempfile.TemporaryDirectory(prefix="shadowrl-family-") as tmp:
        work = Path(tmp) / "ws"
        shutil.copytree(SEED_DIR, work)
        apply_patch_to_dir(work, task.bug_patch)
        apply_patch_to_dir(work, task.test_patch)
        return holds(job, task, work, Path(tmp), code.gold)


def _bug_patch(module: str, mutated: str, visible: dict[str, str]) -> str:
    """The diff from the family seed (a README) to the buggy workspace."""
    return make_patch(dict.fromkeys([module, *visible]), {module: mutated, **visible})


def _instance(
    template: Template, part: Part, task: Task, code: Code, where: str, report: str
) -> Instance:
    digest = hashlib.sha256(f"{code.bug}\0{task.test_patch}".encode()).hexdigest()[:10]
    op = code.operator.replace(" ", "_")
    update = {
        "instance_id": f"family__{template.id}-{digest}",
        "problem_statement": report,
        "source": f"family+ast:{op}@{where}",
        "split": "train" if part == "train" else "heldout",
    }
    return Instance(task.model_copy(update=update), template.id, where, op, part, code.key)
