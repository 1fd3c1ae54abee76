"""Recipes of the built-in medium and hard suites, so they can be regenerated exactly.

Each recipe pins a PyPI sdist (version and sha256) of a small, pure-Python library
with its own test suite. `build_suite(tier)` runs the generator on every recipe with
a fixed RNG seed and writes `data/suites/<tier>.jsonl`; the committed files are the
output, validated, so CI never needs to regenerate them. `build_suite(tier, only=...)`
regenerates some libraries and keeps every other record byte for byte, so adding a
library never reshuffles the tasks already in use.

Libraries with a `src/` layout run their tests with `src` on PYTHONPATH, and their
env is installed `--no-deps` from a pinned closure that leaves the library itself out
(hypothesis depends on attrs, freezegun on python-dateutil): a second copy in
site-packages would be what a plain `python -m pytest` imports, silently.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

from shadowrl.tasks.task import SUITES_DIR, Seed, Task, load_tasks, save_tasks

PYTEST_CMD: tuple[str, ...] = ("python", "-P", "-m", "pytest")  # `Task.test_cmd`'s default
SRC_LAYOUT_CMD = ("env", "PYTHONPATH=src", *PYTEST_CMD)  # the grader's own env runs first
_PYTEST = ("pytest==8.3.3", "iniconfig==2.0.0", "packaging==24.1", "pluggy==1.5.0")
_HYPOTHESIS = ("hypothesis==6.112.1", "sortedcontainers==2.4.0")


@dataclass(frozen=True)
class Recipe:
    """One library of the built-in suites: where it comes from and how many tasks to take."""

    sdist: str
    sha256: str
    repo: str
    medium: int
    hard: int
    env: tuple[str, ...] = ("pytest",)
    tests: tuple[str, ...] = ()  # restrict to these test files ('' = all)
    test_cmd: tuple[str, ...] = PYTEST_CMD

    @property
    def name(self) -> str:
        return self.sdist.split("==", 1)[0]


RECIPES: tuple[Recipe, ...] = (
    Recipe("toolz==1.0.0", "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02", "pytoolz/toolz", 6, 3),
    Recipe("more-itertools==10.5.0", "5482bfef7849c25dc3c6dd53a6173ae4795da2a41a80faea6700d9f5846c5da6",
           "more-itertools/more-itertools", 6, 3),
    Recipe("inflection==0.5.1", "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
           "jpvanhal/inflection", 4, 2),
    Recipe("six==1.16.0", "1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926", "benjaminp/six", 3, 1),
    Recipe("parse==1.20.2", "b41d604d16503c79d81af5165155c0b20f6c8d6c559efa66b4b695c3e5a0a0ce", "r1chardj0n3s/parse", 4, 2),
    Recipe("boltons==24.1.0", "4a49b7d57ee055b83a458c8682a2a6f199d263a8aa517098bda9bab813554b87",
           "mahmoud/boltons", 6, 3, env=("pytest==7.4.4",)),  # its conftest predates pytest 8
    Recipe("tabulate==0.9.0", "0095b12bf5966de529c0feb1fa08671671b3368eec77d7ef7ab114be2c068b3c",
           "astanin/python-tabulate", 3, 1),
    Recipe("attrs==24.2.0", "5cfb1b9148b5b086569baec03f20d7b6bf3bcacc9a42bebf87ffaaca362f6346",
           "python-attrs/attrs", 4, 2, test_cmd=SRC_LAYOUT_CMD,
           env=("--no-deps", *_PYTEST, *_HYPOTHESIS, "cloudpickle==3.0.0", "pympler==1.1")),
    Recipe("python-dateutil==2.9.0.post0", "37dd54208da7e1cd875388217d5e00ebd4179249f90fb72437e91a35459a0ad3",
           "dateutil/dateutil", 4, 2, test_cmd=SRC_LAYOUT_CMD,
           env=("--no-deps", *_PYTEST, *_HYPOTHESIS, "attrs==24.2.0", "freezegun==1.5.1", "six==1.16.0",
                "pytest-cov==5.0.0", "coverage==7.6.1")),  # its conftest marks tests `no_cover`
)  # fmt: skip
MUTATIONS = {"medium": 1, "hard": 2}


def build_suite(
    tier: str,
    cache_dir: Path,
    *,
    only: Collection[str] = (),
    workers: int = 2,
    rng_seed: int = 0,
    on_result: Callable[[Task | None], None] = lambda _: None,
) -> list[Task]:
    """Generate and validate the `medium` or `hard` suite from `RECIPES`.

    `only` names the libraries to regenerate (all when empty); the records of the
    others are kept from the current file. The file is rewritten after each library,
    so progress survives an interruption and no record is ever missing from it.
    """
    unknown = set(only) - {r.name for r in RECIPES}
    if unknown:
        raise ValueError(f"no recipe for {sorted(unknown)}")
    path = SUITES_DIR / f"{tier}.jsonl"
    by_sdist: dict[str, list[Task]] = {r.sdist: [] for r in RECIPES}
    for task in load_tasks(path) if path.exists() else []:
        by_sdist.setdefault(str(task.seed.sdist), []).append(task)
    for recipe in RECIPES:
        if not only or recipe.name in only:
            by_sdist[recipe.sdist] = _make(recipe, tier, cache_dir, workers, rng_seed, on_result)
            save_tasks(chain.from_iterable(by_sdist.values()), path)
    return list(chain.from_iterable(by_sdist.values()))


def _make(
    recipe: Recipe,
    tier: str,
    cache_dir: Path,
    workers: int,
    rng_seed: int,
    on_result: Callable[[Task | None], None],
) -> list[Task]:
    from shadowrl.tasks.env import build_env, env_python
    from shadowrl.tasks.make import MakeSpec, make_tasks
    from shadowrl.tasks.prepare import seed_dir

    seed = Seed(sdist=recipe.sdist, sha256=recipe.sha256)
    spec = MakeSpec(
        seed=seed,
        repo=recipe.repo,
        tier=tier,
        n=recipe.medium if tier == "medium" else recipe.hard,
        mutations=MUTATIONS[tier],
        tests=recipe.tests,
        env=recipe.env,
        test_cmd=recipe.test_cmd,
        rng_seed=rng_seed,
        statement=tier,
    )
    python = env_python(build_env(spec.env, cache_dir))
    return make_tasks(spec, seed_dir(seed, cache_dir), python, workers=workers, on_result=on_result)
