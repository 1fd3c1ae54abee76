"""Tasks: SWE-bench-style instances, their workspaces and envs, and un-gameable grading.

Read in this order:

    task.py       the record, JSONL files (SWE-bench compatible), splits, built-in suites
    prepare.py    seed (sdist / dir) -> buggy workspace + test env (env.py), cached
    verify.py     grading in a fork: restore tests, apply hidden tests, JUnit by nonce
    runner.py     the one pytest command line and its JUnit parser, shared by all
    mutate.py     AST bug injection operators (pure)
    make.py       generating validated tasks in a process pool
    humaneval.py  the easy tier;  suites.py  recipes of the medium and hard tiers
    reference.py  gold / noop policies and the scripted expert, played through the real harness

`shadowrl tasks make|easy|wider|suite|validate|export` is `commands/tasks.py`.
"""

from shadowrl.tasks.prepare import PreparedTask, prepare, task_prompt
from shadowrl.tasks.task import Seed, Task, load_suite, load_tasks, save_tasks
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
