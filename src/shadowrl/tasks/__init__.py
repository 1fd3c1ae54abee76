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
"""

from shadowrl.tasks.load import load_suite
from shadowrl.tasks.prepare import PreparedTask, prepare, task_prompt
from shadowrl.tasks.task import Seed, Task, load_tasks, save_tasks
from shadowrl.tasks.verify import Verdict, verify

__all__ = [
    "PreparedTask",
    "Seed",
    "Task",
    "Verdict",
    "load_suite",
    "load_tasks",
    "prepare",
    "save_tasks",
    "task_prompt",
    "verify",
]
