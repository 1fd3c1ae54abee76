"""The grader keeps the maintainers' pytest options, strips only its denylist, merges pythonpath.

Pure checks of the command line first, then real repositories graded end to end: a
src-layout package whose config sets `pythonpath` and `addopts` full of denied options,
one whose tests need the task's own `-o pythonpath=src`, and one that only collects with
`--import-mode=importlib`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.env import build_env, env_python
from shadowrl.tasks.patch import apply_patch, make_patch
from shadowrl.tasks.prepare import prepare
from shadowrl.tasks.pytest_args import (
    ProjectConfig,
    find_config,
    grading_args,
    read_project_config,
    split_overrides,
    strip_denied,
)
from shadowrl.tasks.runner import directory_reader, run_tests_local
from shadowrl.tasks.task import Seed, Task
from shadowrl.tasks.verify import verify


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        (["-x", "-q"], ["-q"]),
        (["-vx"], ["-v"]),
        (["-rxs", "-ra"], ["-rxs", "-ra"]),  # -r takes a value: its 'x' is a report char
        (["-n", "4", "-v"], ["-v"]),
        (["-vn4", "t.py"], ["-v", "t.py"]),
        (["-p", "xdist", "-p", "pytester", "-pno:xdist"], ["-p", "pytester", "-pno:xdist"]),
        (["--maxfail=2", "--maxfail", "3", "t.py"], ["t.py"]),
        (["--cov", "--cov-report", "term", "tests"], ["tests"]),
        (["--cov", "src", "-q", "--cov=pkg", "--no-cov-on-fail"], ["-q"]),
        (["--lf", "--ff", "--sw", "--pdb", "--looponfail", "-f"], []),
        (["-k", "-x", "--tb", "short", "-W", "error"], ["-k", "-x", "--tb", "short", "-W", "error"]),
        (["--import-mode=importlib", "--doctest-modules", "--", "-x"], ["--import-mode=importlib", "--doctest-modules", "--", "-x"]),
    ],
)  # fmt: skip
def test_only_the_denylist_is_stripped(args: list[str], kept: list[str]) -> None:
    got, dropped = strip_denied(args)
    assert got == kept
    assert bool(dropped) == (kept != args)


def test_overrides_are_split_out_in_every_spelling() -> None:
    args = ["-o", "pythonpath=src", "-opythonpath=a b", "--override-ini=addopts=-x", "-q"]
    assert split_overrides(args, "pythonpath") == (
        ["--override-ini=addopts=-x", "-q"],
        ["src", "a b"],
    )
    assert split_overrides(args, "addopts")[1] == ["-x"]


def _reader(files: dict[str, str]) -> Callable[[str], str | None]:
    return files.get


def test_config_file_precedence_follows_pytest() -> None:
    ids = ["tests/test_a.py::test_x"]
    tox = {
        "tox.ini": "[tox]\n[pytest]\naddopts = -q\n",
        "pyproject.toml": "[project]\nname = 'x'\n",
    }
    assert (
        find_config(_reader(tox), ids) == "tox.ini"
    )  # pyproject without a pytest table is skipped
    both = {**tox, "pytest.ini": ""}
    assert find_config(_reader(both), ids) == "pytest.ini"  # pytest.ini counts even if empty
    cfg = {"setup.cfg": "[metadata]\nname = x\n", "pyproject.toml": "[project]\n"}
    assert find_config(_reader(cfg), ids) == "pyproject.toml"  # rootdir fallback, no options
    nested = {"tests/pytest.ini": "[pytest]\naddopts = -v\n", "pytest.ini": "[pytest]\n"}
    assert find_config(_reader(nested), ids) == "tests/pytest.ini"
    assert find_config(_reader(both), ids, explicit="ci.ini") == "ci.ini"


def test_project_config_reads_ini_and_toml_forms() -> None:
    files = {
        "setup.cfg": "[tool:pytest]\naddopts =\n  -x --cov=pkg\n  --import-mode=importlib\npythonpath = src lib\n",
        "pyproject.toml": '[tool.pytest.ini_options]\naddopts = ["-q", "--lf"]\npythonpath = ["src"]\n',
        "pytest.toml": '[pytest]\naddopts = ["-ra"]\n',
        "sub/pytest.ini": "[pytest]\npythonpath = here\n",
    }
    read = _reader(files)
    assert read_project_config(read, "setup.cfg") == ProjectConfig(
        "setup.cfg", ("-x", "--cov=pkg", "--import-mode=importlib"), ("src", "lib")
    )
    assert read_project_config(read, "pyproject.toml").addopts == ("-q", "--lf")
    assert read_project_config(read, "pytest.toml").addopts == ("-ra",)
    assert read_project_config(read, "sub/pytest.ini").pythonpath == ("sub/here",)
    assert read_project_config(read, None) == ProjectConfig(None)


def test_grading_args_merge_pythonpath_and_keep_the_project_options() -> None:
    project = ProjectConfig(
        "pyproject.toml", ("-x", "-p", "xdist", "--import-mode=importlib"), ("src",)
    )
    task_opts = ["-q", "-o", "pythonpath=lib", "--maxfail=1", "-p", "pytester"]
    args, dropped = grading_args(task_opts, project, ["-p", "grader"])
    assert args == [
        "--tb=short", "-q", "-p", "pytester", "-p", "no:cacheprovider",
        "-o", "addopts=--import-mode=importlib", "-o", "pythonpath=src lib .", "-p", "grader",
    ]  # fmt: skip
    assert dropped == ["-x", "-p", "xdist", "--maxfail=1"]
    own = grading_args(["-o", "addopts=--tb=line -x"], project, [])[0]  # the task replaces addopts
    assert "addopts=--tb=line" in own and "--tb=short" not in own


CORE = "def double(x):\n    return 2 * x\n"
BUGGY = CORE.replace("2 * x", "x + x + 1")
VISIBLE = "from pkg.core import double\n\n\ndef test_zero_is_odd_today():\n    assert double(0) in (0, 1)\n"
HIDDEN = (
    "from pkg.core import double\n\n\n"
    "def test_a_double():\n    assert double(2) == 4\n\n\n"
    "def test_b_double_neg():\n    assert double(-1) == -2\n"
)
CONFTEST = "import pkg  # the package must import from src/ for collection to start\n"


def _src_layout_task(root: Path, config: dict[str, str], test_cmd: str) -> Task:
    """A src-layout library with a bug in `double`, its new tests hidden in `test_patch`."""
    files = {
        "src/pkg/__init__.py": "",
        "src/pkg/core.py": CORE,
        "tests/conftest.py": CONFTEST,
        "tests/test_visible.py": VISIBLE,
        **config,
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return Task(
        instance_id=f"pkg__double-{root.name}",
        repo="local/pkg",
        problem_statement="`double` is off by one.",
        patch=make_patch({"src/pkg/core.py": BUGGY}, {"src/pkg/core.py": CORE}),
        bug_patch=make_patch({"src/pkg/core.py": CORE}, {"src/pkg/core.py": BUGGY}),
        test_patch=make_patch({}, {"tests/test_new.py": HIDDEN}),
        FAIL_TO_PASS=("tests/test_new.py::test_a_double", "tests/test_new.py::test_b_double_neg"),
        PASS_TO_PASS=("tests/test_visible.py::test_zero_is_odd_today",),
        seed=Seed(path=str(root)),
        test_cmd=test_cmd,  # type: ignore[arg-type]  # a shell string, split on load
        timeout_s=60,
    )


LAYOUTS = {
    # the maintainers' config sets pythonpath; its addopts would stop at the first failure,
    # load xdist and pytest-cov (not installed) and rerun only the last failures
    "pyproject pythonpath + denied addopts": (
        {"pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src"]\n'
         'addopts = "-x -p xdist --cov=pkg --cov-report=term -n 2 --lf -ra"\n'},
        "python -P -m pytest",
    ),
    # no config at all: the user's own command line says where the package is
    "test_cmd -o pythonpath=src": ({}, "python -m pytest -q -p no:cacheprovider -o pythonpath=src"),
}  # fmt: skip


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("backend", ["local", "overlay"])
def test_src_layout_repositories_are_graded_as_their_maintainers_test_them(
    layout: str, backend: str, tmp_path: Path, cache_dir: Path, sandbox_for: Callable[..., Sandbox]
) -> None:
    config, cmd = LAYOUTS[layout]
    prepared = prepare(_src_layout_task(tmp_path, config, cmd), cache_dir)
    task = prepared.task
    noop = verify(task, prepared, sandbox_for(prepared, backend))
    # with -x kept, the first failure would stop the run and leave the second id missing
    assert noop.status == "ran" and not noop.resolved, noop.log
    assert noop.failing == dict.fromkeys(task.FAIL_TO_PASS, "failed"), noop.log
    box = sandbox_for(prepared, backend)
    fixed = apply_patch({"src/pkg/core.py": BUGGY}, task.patch)["src/pkg/core.py"]
    box.write_file("src/pkg/core.py", str(fixed))
    gold = verify(task, prepared, box)
    assert gold.resolved and gold.status == "ran", gold.log


def test_importlib_import_mode_from_the_project_config_is_kept(
    tmp_path: Path, cache_dir: Path
) -> None:
    """Two test modules with one basename and no __init__.py collect only in importlib mode."""
    for sub in ("a", "b"):
        (tmp_path / "tests" / sub).mkdir(parents=True)
        (tmp_path / "tests" / sub / "test_same.py").write_text(
            f"def test_{sub}():\n    assert True\n"
        )
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --import-mode=importlib -x\n")
    ids = ("tests/a/test_same.py::test_a", "tests/b/test_same.py::test_b")
    task = Task(
        instance_id="same-names", repo="r", problem_statement="", patch="", FAIL_TO_PASS=ids,
        seed=Seed(path=str(tmp_path)), timeout_s=60,
    )  # fmt: skip
    python = env_python(build_env(task.env, cache_dir))
    run = run_tests_local(task, tmp_path, python, ids, tmp_path)
    assert (run.status, run.results(ids)) == ("ran", dict.fromkeys(ids, "passed")), run.log
    assert run.dropped == ("-x",)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # prepend mode: an import file mismatch
    broken = run_tests_local(task, tmp_path, python, ids, tmp_path)
    assert broken.status == "collection_error" and "passed" not in broken.results(ids).values()
    assert directory_reader(tmp_path)("pytest.ini") == "[pytest]\n"
