"""The task record: one SWE-bench-compatible instance, plus where its code comes from.

A task file is JSONL that SWE-bench, SWE-smith and SWE-Gym tools can read (their
field names, their JSON-encoded test lists accepted on input) with a few fields of
our own: `seed` says how to build the buggy starting workspace offline and
reproducibly, `bug_patch` is the SWE-smith-style diff that introduced the bug, and
`env` names the pip requirements the tests need. A malformed file fails loudly with
the line number and the field at fault, never with a half-loaded suite: the three
diffs are parsed on load, so a bad one is a `TaskFileError` naming the task file's
line and the diff's, not a crash in the middle of an evaluation. `test_cmd` may be
written as a shell string (`"python -m pytest -q"`, split with `shlex`) or an argv.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from shadowrl.atomic import write_file
from shadowrl.tasks.diffrules import RULES
from shadowrl.tasks.patch import parse_patch

SUITES_DIR = Path(__file__).resolve().parent.parent / "data" / "suites"
# Fields of SWE-bench-family records that we accept on input and do not keep.
FOREIGN_FIELDS = frozenset(
    {"base_commit", "version", "environment_setup_commit", "hints_text", "created_at", "image_name"}
)
Split = Literal["train", "heldout"]


class Seed(BaseModel):
    """Where the starting source comes from: a pinned PyPI sdist or a local directory."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sdist: str | None = Field(
        default=None, description="'name==version' of a PyPI sdist; its root is the workspace."
    )
    sha256: str | None = Field(
        default=None, description="sha256 of the sdist file, checked after download."
    )
    path: str | None = Field(
        default=None, description="Directory (or git repo) copied as the workspace."
    )
    base_commit: str = Field(
        default="", description="Commit checked out when `path` is a git repo ('' = as is)."
    )

    @model_validator(mode="after")
    def _one_source(self) -> Seed:
        if (self.sdist is None) == (self.path is None):
            raise ValueError("seed needs exactly one of 'sdist' or 'path'")
        if self.sdist is not None and (self.sha256 is None or "==" not in self.sdist):
            raise ValueError("an sdist seed needs 'name==version' and its 'sha256'")
        return self


class Task(BaseModel):
    """One instance: a buggy workspace, a problem statement and the tests that judge a fix."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    instance_id: str = Field(description="Unique id, e.g. 'toolz__cons-1'.")
    repo: str = Field(description="Project the code comes from, e.g. 'pytoolz/toolz'.")
    problem_statement: str = Field(description="What the agent is told is wrong.")
    patch: str = Field(description="Gold fix: a unified diff against the buggy workspace.")
    test_patch: str = Field(default="", description="Hidden tests, applied only when grading.")
    FAIL_TO_PASS: tuple[str, ...] = Field(description="pytest node ids that fail before the fix.")
    PASS_TO_PASS: tuple[str, ...] = Field(
        default=(), description="pytest node ids that must keep passing."
    )
    bug_patch: str = Field(
        default="", description="Diff that introduced the bug into the seed ('' = natural bug)."
    )
    seed: Seed = Field(description="Where the starting source comes from.")
    tier: str = Field(default="custom", description="'easy', 'medium', 'hard' or anything else.")
    source: str = Field(
        default="", description="How the task was made, e.g. 'humaneval+ast', 'swe-smith'."
    )
    split: Split = Field(
        default="train", description="Training split or held-out evaluation split."
    )
    test_cmd: tuple[str, ...] = Field(
        default=("python", "-P", "-m", "pytest"),
        description="Test command run from the workspace root, an argv or a shell string "
        "(split with shlex); 'python' means the env's interpreter. Its pytest options and the "
        "project's own pytest config win over the grader's defaults (`tasks/pytest_args.py`).",
    )
    timeout_s: float = Field(
        default=120.0, description="Hard wall-clock limit of one test run, seconds."
    )
    env: tuple[str, ...] = Field(
        default=("pytest",), description="pip requirements the tests need."
    )
    allowed_primitives: tuple[str, ...] = Field(
        default=(),
        description="`diffrules` rule ids the gold patch itself needs; an agent may use them too.",
    )

    @model_validator(mode="before")
    @classmethod
    def _accept_swebench(cls, data: Any) -> Any:
        """Records from SWE-bench/SWE-smith/SWE-Gym carry fields we derive or do not use."""
        if not isinstance(data, dict):
            return data
        commit = data.get("base_commit", "")
        data = {k: v for k, v in data.items() if k not in FOREIGN_FIELDS}
        if commit and isinstance(data.get("seed"), dict) and "path" in data["seed"]:
            data["seed"] = {"base_commit": commit, **data["seed"]}
        return data

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", "env", "test_cmd", mode="before")
    @classmethod
    def _decode_json_list(cls, v: Any, info: ValidationInfo) -> Any:
        """SWE-bench stores lists as JSON-encoded strings; accept both forms. Any other
        string `test_cmd` is a shell command line, split as a shell would."""
        if isinstance(v, str) and v.lstrip().startswith("["):
            return json.loads(v)
        return shlex.split(v) if isinstance(v, str) and info.field_name == "test_cmd" else v

    @field_validator("patch", "test_patch", "bug_patch")
    @classmethod
    def _diff_parses(cls, v: str) -> str:
        """A diff that cannot be read fails here, when the task file is loaded."""
        if v.strip() and not parse_patch(v):
            raise ValueError("no file diff found (expected 'diff --git' or '---'/'+++' headers)")
        return v

    @model_validator(mode="after")
    def _has_failing_tests(self) -> Task:
        if not self.FAIL_TO_PASS:
            raise ValueError("FAIL_TO_PASS must name at least one test")
        return self

    @field_validator("allowed_primitives")
    @classmethod
    def _known_rules(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if unknown := set(v) - set(RULES):
            raise ValueError(f"no diffrules rule {sorted(unknown)}")
        return v

    @property
    def test_ids(self) -> tuple[str, ...]:
        """Every test the grader runs, failing ones first, without duplicates."""
        return tuple(dict.fromkeys(self.FAIL_TO_PASS + self.PASS_TO_PASS))


class TaskFileError(ValueError):
    """A task file line that does not parse or validate."""


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "<record>"
    return f"field {where!r}: {first['msg']}"


def _resolve_seed(task: Task, base: Path) -> Task:
    """Relative seed paths are relative to the task file, so suites can ship their seeds."""
    if task.seed.path is None or Path(task.seed.path).is_absolute():
        return task
    seed = task.seed.model_copy(update={"path": str((base / task.seed.path).resolve())})
    return task.model_copy(update={"seed": seed})


def load_tasks(path: str | Path, split: Split | None = None) -> list[Task]:
    """Read a JSONL task file (blank lines allowed); duplicate ids are an error."""
    path = Path(path)
    tasks: list[Task] = []
    seen: set[str] = set()
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            task = Task.model_validate(json.loads(line))
        except json.JSONDecodeError as e:
            raise TaskFileError(f"{path}:{lineno}: not JSON ({e.msg})") from e
        except ValidationError as e:
            raise TaskFileError(f"{path}:{lineno}: {_describe(e)}") from e
        if task.instance_id in seen:
            raise TaskFileError(f"{path}:{lineno}: duplicate instance_id {task.instance_id!r}")
        seen.add(task.instance_id)
        if split is None or task.split == split:
            tasks.append(_resolve_seed(task, path.parent))
    return tasks


def save_tasks(tasks: Iterable[Task], path: str | Path) -> None:
    """Write JSONL; seed paths under the file's directory are stored relative to it."""
    path = Path(path)
    base = path.parent.resolve()
    lines = []
    for task in tasks:
        record = task.model_dump(mode="json")
        if not record["allowed_primitives"]:  # keep records of tasks without one unchanged
            del record["allowed_primitives"]
        seed_path = task.seed.path
        if seed_path is not None and Path(seed_path).resolve().is_relative_to(base):
            record["seed"]["path"] = str(Path(seed_path).resolve().relative_to(base))
        lines.append(json.dumps(record, sort_keys=False))
    write_file(path, "".join(line + "\n" for line in lines))  # a reader never sees half


def save_portable(tasks: Iterable[Task], path: Path) -> None:
    """Write JSONL with every seed directory copied under `<stem>-seeds/` beside the file
    (stored relative to it), so the file and that folder run anywhere together."""
    import shutil

    seeds = path.parent / f"{path.stem}-seeds"
    out = []
    for task in tasks:
        if task.seed.path is None:
            out.append(task)
            continue
        src = Path(task.seed.path)
        dest = seeds / f"{src.name}-{hashlib.sha256(str(src).encode()).hexdigest()[:8]}"
        if not dest.exists():
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        out.append(
            task.model_copy(update={"seed": task.seed.model_copy(update={"path": str(dest)})})
        )
    save_tasks(out, path)


def to_swebench(task: Task) -> dict[str, Any]:
    """The record as SWE-bench's harness reads it (test lists JSON-encoded)."""
    return {
        "instance_id": task.instance_id,
        "repo": task.repo,
        "base_commit": task.seed.base_commit,
        "problem_statement": task.problem_statement,
        "patch": task.patch,
        "test_patch": task.test_patch,
        "FAIL_TO_PASS": json.dumps(list(task.FAIL_TO_PASS)),
        "PASS_TO_PASS": json.dumps(list(task.PASS_TO_PASS)),
        "version": task.seed.sdist.split("==", 1)[1] if task.seed.sdist else "",
        "environment_setup_commit": "",
        "hints_text": "",
        "created_at": "",
    }


def export_swebench(tasks: Iterable[Task], path: str | Path) -> None:
    """Write a SWE-bench-format JSONL file."""
    Path(path).write_text("".join(json.dumps(to_swebench(t)) + "\n" for t in tasks))


def hash_split(instance_id: str, heldout_fraction: float = 0.2, salt: str = "shadowrl") -> Split:
    """Deterministic split: the same id always lands in the same split, on every machine."""
    digest = hashlib.sha256(f"{salt}:{instance_id}".encode()).digest()
    return "heldout" if int.from_bytes(digest[:8], "big") / 2**64 < heldout_fraction else "train"


def stratified(tasks: Sequence[Task], limit: int | None) -> list[Task]:
    """`limit` tasks (None or 0 = all) taken round-robin over their sources (`Task.repo`:
    a template, a library, a HumanEval problem), in file order within each, returned in
    file order. A limit thus keeps as many sources as it can instead of the first ones;
    a suite whose tasks all have their own source gives its first `limit` tasks."""
    if not limit or limit >= len(tasks):
        return list(tasks)
    groups: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        groups.setdefault(task.repo, []).append(i)
    chosen: list[int] = []
    for round_ in itertools.count():
        row = [g[round_] for g in groups.values() if round_ < len(g)]
        chosen += row[: limit - len(chosen)]
        if len(chosen) >= limit:
            return [tasks[i] for i in sorted(chosen)]
    raise AssertionError("unreachable")


def builtin_suites() -> list[str]:
    """Names of the suites shipped in `data/suites`."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.jsonl"))


class SuiteNotFound(FileNotFoundError):
    """A suite name that is neither built in nor a file."""


def suite_path(name: str) -> Path:
    """A built-in suite name ('easy', 'medium', 'hard', ...) or a path to a JSONL file."""
    builtin = SUITES_DIR / f"{name}.jsonl"
    if builtin.exists():
        return builtin
    if Path(name).is_file():
        return Path(name)
    raise SuiteNotFound(
        f"no suite {name!r}: give a built-in suite {builtin_suites()}, a family part "
        "(family:train|dev|heldout-seeds|heldout-templates[@n]) or a task JSONL file"
    )
