"""Recipes of the built-in medium and hard suites, so they can be regenerated exactly.

Each recipe pins a PyPI sdist (version and sha256) of a small, pure-Python library
with its own test suite. `build_suite(tier)` runs the generator on every recipe with
a fixed RNG seed and writes `data/suites/<tier>.jsonl`; the committed files are the
output, validated, so CI never needs to regenerate them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shadowrl.tasks.task import SUITES_DIR, Seed, Task, save_tasks


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
)  # fmt: skip
MUTATIONS = {"medium": 1, "hard": 2}


def build_suite(
    tier: str,
    cache_dir: Path,
    *,
    workers: int = 2,
    rng_seed: int = 0,
    on_result: Callable[[Task | None], None] = lambda _: None,
) -> list[Task]:
    """Generate and validate the `medium` or `hard` suite from `RECIPES`."""
    from shadowrl.tasks.env import build_env, env_python
    from shadowrl.tasks.make import MakeSpec, make_tasks
    from shadowrl.tasks.prepare import seed_dir

    tasks: list[Task] = []
    for recipe in RECIPES:
        seed = Seed(sdist=recipe.sdist, sha256=recipe.sha256)
        spec = MakeSpec(
            seed=seed,
            repo=recipe.repo,
            tier=tier,
            n=recipe.medium if tier == "medium" else recipe.hard,
            mutations=MUTATIONS[tier],
            tests=recipe.tests,
            env=recipe.env,
            rng_seed=rng_seed,
            statement=tier,
        )
        python = env_python(build_env(spec.env, cache_dir))
        base = seed_dir(seed, cache_dir)
        tasks += make_tasks(spec, base, python, workers=workers, on_result=on_result)
        save_tasks(tasks, SUITES_DIR / f"{tier}.jsonl")  # after each library: progress survives
    return tasks
