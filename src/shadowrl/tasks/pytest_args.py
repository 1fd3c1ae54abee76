"""The pytest command line the grader runs: the maintainers' options first, ours only where needed.

A repository is graded the way its maintainers test it. Their pytest configuration
(`addopts`, `pythonpath`) and the task's own `test_cmd` options can change what is
collected and how it is imported (`--import-mode=importlib`, `-p pytester`,
`--doctest-modules`, `-o pythonpath=src`), so they are kept. The grader changes
exactly two things:

- it strips a named denylist (`DENIED`), from `addopts` and from `test_cmd` alike:
  options that would change the verdict (stop early, rerun or reorder by a cache,
  drop into a debugger) or that need plugins the task env does not install
  (coverage, xdist, reruns, randomisation);
- where it must set an option the project also sets, it merges rather than
  overrides: `pythonpath` becomes the project's and the task's entries followed by
  the workspace root `.`, and the filtered `addopts` are passed back with `-o`.

Its own required flags (no cache provider, its outcome plugin) come last, so no
project option can turn them off. Everything here is a pure function of the command,
the config files and the ids, so it is tested without running pytest.
"""

from __future__ import annotations

import configparser
import shlex
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

Arity = Literal["flag", "value", "optional"]

# Long options the grader strips, and whether each takes a value ('optional': nargs='?').
DENIED: dict[str, Arity] = {
    # stop early or select by a previous run's cache: every listed id must run, fresh
    "--exitfirst": "flag", "--maxfail": "value",
    "--last-failed": "flag", "--lf": "flag", "--failed-first": "flag", "--ff": "flag",
    "--new-first": "flag", "--nf": "flag", "--last-failed-no-failures": "value", "--lfnf": "value",
    "--stepwise": "flag", "--sw": "flag", "--stepwise-skip": "flag", "--sw-skip": "flag",
    "--stepwise-reset": "flag", "--sw-reset": "flag",
    # debuggers wait for a terminal that is not there
    "--pdb": "flag", "--pdbcls": "value", "--trace": "flag",
    # pytest-xdist (not installed; workers would also escape the run's process accounting)
    "--numprocesses": "value", "--maxprocesses": "value", "--dist": "value", "--tx": "value",
    "--rsyncdir": "value", "--rsyncignore": "value", "--looponfail": "flag", "--forked": "flag",
    "--max-worker-restart": "value", "--maxschedchunk": "value",
    # pytest-cov (not installed; `--cov-fail-under` would also fail a passing run)
    "--cov": "optional", "--cov-report": "value", "--cov-config": "value",
    "--cov-fail-under": "value", "--cov-append": "flag", "--cov-branch": "flag",
    "--cov-context": "value", "--cov-reset": "flag", "--cov-precision": "value", "--no-cov": "flag", "--no-cov-on-fail": "flag",
    # pytest-rerunfailures / pytest-randomly: a flaky pass must not count, order stays fixed
    "--reruns": "value", "--reruns-delay": "value", "--only-rerun": "value",
    "--randomly-seed": "value", "--randomly-dont-reorganize": "flag",
}  # fmt: skip
DENIED_SHORT = frozenset("xf")  # -x, and xdist's -f (its -n N is in `_short`)
DENIED_PLUGINS = frozenset(
    {"xdist", "xdist.plugin", "xdist.looponfail", "pytest_cov", "pytest_cov.plugin", "cov",
     "rerunfailures", "pytest_rerunfailures", "randomly", "pytest_randomly"}
)  # fmt: skip
# Short options of pytest that take a value, attached (`-kexpr`) or as the next argument.
_SHORT_VALUE = frozenset("kmpocWrn")
_LONG_VALUE = frozenset(
    {"--override-ini", "--config-file", "--rootdir", "--deselect", "--ignore", "--ignore-glob",
     "--confcutdir", "--basetemp", "--import-mode", "--tb", "--capture", "--junitxml",
     "--junit-xml", "--durations", "--log-level", "--pythonwarnings", "--doctest-glob"}
)  # fmt: skip
_CONFIG_FILES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)  # fmt: skip  (pytest's own order of precedence in one directory)


@dataclass(frozen=True)
class ProjectConfig:
    """What the maintainers' pytest config file says about collecting and importing."""

    path: str | None  # workspace-relative config file, None if there is none
    addopts: tuple[str, ...] = ()
    pythonpath: tuple[str, ...] = ()


def strip_denied(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped): `args` without the options of `DENIED`, `DENIED_SHORT`, `DENIED_PLUGINS`.

    `dropped` holds the original tokens of every option removed or rewritten (`-vx` -> `-v`).
    """
    kept: list[str] = []
    dropped: list[str] = []
    k = 0
    while k < len(args):
        tok, nxt = args[k], (args[k + 1] if k + 1 < len(args) else None)
        if tok == "--":
            kept += args[k:]
            break
        if tok.startswith("--"):
            width, keep = _long(tok, nxt)
        elif tok.startswith("-") and len(tok) > 1:
            width, keep = _short(tok, nxt)
        else:
            width, keep = 1, [tok]
        consumed = list(args[k : k + width])
        kept += keep
        dropped += consumed if keep != consumed else []
        k += width
    return kept, dropped


def _long(tok: str, nxt: str | None) -> tuple[int, list[str]]:
    """(tokens consumed, tokens kept in their place) for a long option."""
    name, eq, _ = tok.partition("=")
    arity = DENIED.get(name)
    if arity is None:
        takes_next = name in _LONG_VALUE and not eq and nxt is not None
        return (2, [tok, str(nxt)]) if takes_next else (1, [tok])
    if arity == "flag" or eq or nxt is None:
        return 1, []
    return (2 if arity == "value" or not nxt.startswith("-") else 1), []


def _short(tok: str, nxt: str | None) -> tuple[int, list[str]]:
    """`_long` for a group of short options (`-vx`, `-n4`, `-p xdist`, `-rxs`)."""
    kept = ""
    for j, c in enumerate(tok[1:], 1):
        if c in _SHORT_VALUE:  # the rest of the group, or the next token, is its value
            attached = tok[j + 1 :]
            width = 1 if attached or nxt is None else 2
            if c == "n" or (c == "p" and (attached or nxt) in DENIED_PLUGINS):
                return width, (["-" + kept] if kept else [])
            return width, ["-" + kept + tok[j:], *([str(nxt)] if width == 2 else [])]
        if c not in DENIED_SHORT:
            kept += c
    return 1, (["-" + kept] if kept else [])


def split_overrides(args: Sequence[str], key: str) -> tuple[list[str], list[str]]:
    """(args without any `-o key=...`, the values given for `key` in order)."""
    rest: list[str] = []
    values: list[str] = []
    k = 0
    while k < len(args):
        tok = args[k]
        value: str | None = None
        width = 1
        if tok in ("-o", "--override-ini") and k + 1 < len(args):
            value, width = args[k + 1], 2
        elif tok.startswith("--override-ini="):
            value = tok.partition("=")[2]
        elif tok.startswith("-o") and len(tok) > 2 and not tok.startswith("--"):
            value = tok[2:]
        if value is not None and value.partition("=")[0].strip() == key:
            values.append(value.partition("=")[2])
        else:
            rest += args[k : k + width]
        k += width
    return rest, values


def config_file_option(args: Sequence[str]) -> str | None:
    """The file named by `-c`/`--config-file` in `args`, if any."""
    for k, tok in enumerate(args):
        if tok in ("-c", "--config-file") and k + 1 < len(args):
            return args[k + 1]
        if tok.startswith("--config-file="):
            return tok.partition("=")[2]
    return None


Reader = Callable[[str], str | None]  # workspace-relative path -> text, None if no such file


def find_config(read: Reader, ids: Sequence[str], explicit: str | None = None) -> str | None:
    """The config file pytest would use: `-c`, else the first found walking up from an id."""
    if explicit is not None:
        return explicit
    starts = [PurePosixPath(i.split("::", 1)[0]) for i in ids] or [PurePosixPath(".")]
    for start in starts:
        for base in [start, *start.parents]:
            for name in _CONFIG_FILES:
                rel = str(base / name)
                if (text := read(rel)) is not None and _section(name, text) is not None:
                    return rel
    return "pyproject.toml" if read("pyproject.toml") is not None else None


def _section(name: str, text: str) -> dict[str, object] | None:
    """The pytest section of a config file; None if it has none (and is not pytest's own)."""
    try:
        if name.endswith(".toml"):
            doc = tomllib.loads(text)
            if name != "pyproject.toml":
                return dict(doc.get("pytest", {}))
            tool = doc.get("tool", {}).get("pytest")
            return None if tool is None else dict(tool.get("ini_options", tool))
        parser = configparser.RawConfigParser(strict=False, allow_no_value=True)
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # keep key case
        parser.read_string(text)
    except (tomllib.TOMLDecodeError, configparser.Error):
        return None  # pytest will say what is wrong with it; the grader adds nothing
    section = "tool:pytest" if name == "setup.cfg" else "pytest"
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if name in ("pytest.ini", ".pytest.ini") else None


def _as_args(value: object) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    return tuple(shlex.split(str(value or "")))


def read_project_config(read: Reader, rel: str | None) -> ProjectConfig:
    """`addopts` and `pythonpath` of the config file `rel` (workspace-relative)."""
    text = read(rel) if rel is not None else None
    section = _section(PurePosixPath(rel).name, text) if rel is not None and text else None
    if section is None:
        return ProjectConfig(rel)
    base = PurePosixPath(str(rel)).parent  # pytest reads `pythonpath` relative to the file
    paths = tuple(str(base / p) for p in _as_args(section.get("pythonpath")))
    return ProjectConfig(rel, _as_args(section.get("addopts")), paths)


def pytest_split(cmd: Sequence[str]) -> int:
    """Index just past the word that starts pytest in `cmd` (`-m pytest`, `pytest`, `py.test`)."""
    for k, tok in enumerate(cmd):
        name = PurePosixPath(tok).name
        if (tok == "pytest" and k > 0 and cmd[k - 1] == "-m") or name in ("pytest", "py.test"):
            return k + 1
    return len(cmd)


def grading_args(
    task_opts: Sequence[str], project: ProjectConfig, required: Sequence[str]
) -> tuple[list[str], list[str]]:
    """(pytest options to run with, the options stripped) for one graded run.

    `task_opts` are the options `test_cmd` gives pytest; `required` are the grader's own
    flags (its plugin and output path), which go last so that nothing can undo them.
    """
    opts, addopts_override = split_overrides(task_opts, "addopts")
    opts, task_paths = split_overrides(opts, "pythonpath")
    addopts = tuple(shlex.split(addopts_override[-1])) if addopts_override else project.addopts
    addopts_list, addopts_paths = split_overrides(addopts, "pythonpath")
    kept_addopts, dropped_a = strip_denied(addopts_list)
    kept_opts, dropped_o = strip_denied(opts)
    pythonpath = [*project.pythonpath, *_paths(addopts_paths), *_paths(task_paths), "."]
    defaults = [] if _sets(kept_addopts, "--tb") else ["--tb=short"]
    args = [
        *defaults, *kept_opts, "-p", "no:cacheprovider",
        "-o", f"addopts={shlex.join(kept_addopts)}",
        "-o", f"pythonpath={shlex.join(dict.fromkeys(pythonpath))}",
        *required,
    ]  # fmt: skip
    return args, [*dropped_a, *dropped_o]


def _paths(values: Sequence[str]) -> list[str]:
    """The entries of `-o pythonpath=...` values; the last override is the one pytest uses."""
    return list(shlex.split(values[-1])) if values else []


def _sets(args: Sequence[str], name: str) -> bool:
    return any(a == name or a.startswith(name + "=") for a in args)
