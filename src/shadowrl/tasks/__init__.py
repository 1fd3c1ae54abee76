"""Tasks: SWE-bench-style instances, their workspaces and envs, and un-gameable grading.

The grading layers against reward hacking, what each catches and their limits:
`README.md` beside this file.

Read in this order:

    task.py       the record, JSONL files (SWE-bench compatible), splits, built-in suites
    prepare.py    seed (sdist / dir) -> buggy workspace + test env (env.py), cached
    verify.py     grading in a fork: restore tests, apply hidden tests, outcomes by nonce
    runner.py     the one test run and its outcome reader (run status), shared by all
    pytest_args.py  the maintainers' pytest options kept, a denylist stripped, pythonpath merged
    plugin/shadowrl_grader/ the grader's pytest plugin: each node id's outcome, as reported
    patch.py      unified diffs as git writes them, applied in pure Python
    mutate.py     AST bug injection operators (pure)
    make.py       generating validated tasks in a process pool
    humaneval.py  the easy tier;  suites.py  recipes of the medium and hard tiers
    releases.py   recipes of the releases suite: real bug fixes between two releases
    family/       the generated family: templates, leak-proof splits, suites, one-pass stream
    reference.py  gold / noop policies and the scripted expert, played through the real harness

`shadowrl tasks make|easy|wider|suite|releases|long|family|validate|export` is `commands/tasks.py`.

Other packages import from here, never from the modules, except the generated family
(`tasks.family`), the reference policies (`tasks.reference`: they play through the
agent, which the rest of this package never imports) and three modules whose names are
also the names of what they export (`tasks.prepare`, `tasks.verify`, `tasks.versions`).
"""

from shadowrl.tasks.env import build_env, env_python
from shadowrl.tasks.humaneval import build_easy, build_wider
from shadowrl.tasks.load import load_suite
from shadowrl.tasks.long import SEEDS_DIR, build_long
from shadowrl.tasks.make import MakeSpec, make_tasks
from shadowrl.tasks.mutate import check_operators as check_mutation_operators
from shadowrl.tasks.patch import apply_patch, make_patch, touched_paths
from shadowrl.tasks.prepare import PreparedTask, pin_sdist, prepare, seed_dir, task_prompt
from shadowrl.tasks.releases import SUITE as RELEASES_SUITE
from shadowrl.tasks.releases import build_releases
from shadowrl.tasks.suites import build_suite
from shadowrl.tasks.task import (
    SUITES_DIR,
    Seed,
    Split,
    SuiteNotFound,
    Task,
    TaskFileError,
    export_swebench,
    load_tasks,
    save_portable,
    save_tasks,
    stratified,
)
from shadowrl.tasks.testrun import run_graded_tests
from shadowrl.tasks.verify import Verdict, gold_violations, verify

__all__ = [
    "RELEASES_SUITE",
    "SEEDS_DIR",
    "SUITES_DIR",
    "MakeSpec",
    "PreparedTask",
    "Seed",
    "Split",
    "SuiteNotFound",
    "Task",
    "TaskFileError",
    "Verdict",
    "apply_patch",
    "build_easy",
    "build_env",
    "build_long",
    "build_releases",
    "build_suite",
    "build_wider",
    "check_mutation_operators",
    "env_python",
    "export_swebench",
    "gold_violations",
    "load_suite",
    "load_tasks",
    "make_patch",
    "make_tasks",
    "pin_sdist",
    "prepare",
    "run_graded_tests",
    "save_portable",
    "save_tasks",
    "seed_dir",
    "stratified",
    "task_prompt",
    "touched_paths",
    "verify",
]
