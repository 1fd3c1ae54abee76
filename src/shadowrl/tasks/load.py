"""`load_suite`: any suite name to its tasks, the family's generated parts included.

Apart from `task.py` because the family's suites are built from `task.py`'s records:
the name lookup sits above both, so neither imports the other back.
"""

from __future__ import annotations

from shadowrl.tasks.family.suite import family_split
from shadowrl.tasks.task import Split, Task, load_tasks, suite_path


def load_suite(name: str, split: Split | None = None) -> list[Task]:
    """Tasks of a built-in suite or task file, optionally one split only.

    A family name (`family:dev`, `family:heldout-templates@64`, ...) is generated on
    first use (`tasks/family/suite.py`); its train split is always the family's train part.
    """
    family = family_split(name, split)
    return family if family is not None else load_tasks(suite_path(name), split)
