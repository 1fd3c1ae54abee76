"""Tasks: SWE-bench-style instances, their workspaces and envs, and un-gameable grading.

Read in this order: `task.py` (the record and its JSONL files), `prepare.py` (seed →
buggy workspace + test env), `verify.py` (grading in a fork), `mutate.py` and
`make.py` (generating validated tasks by AST bug injection), `reference.py` (gold
and noop policies that validate a suite through the real harness).
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
