"""The built-in medium/hard suites agree with their recipes, and src-layout tasks really run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from shadowrl.episode import EpisodeSpec, run_reference
from shadowrl.sandbox import SandboxConfig
from shadowrl.tasks.env import env_modules
from shadowrl.tasks.load import load_suite
from shadowrl.tasks.prepare import prepare
from shadowrl.tasks.suites import RECIPES, SRC_LAYOUT_CMD, build_suite
from shadowrl.tasks.task import SUITES_DIR, Task

TIERS = [t for t in ("medium", "hard") if (SUITES_DIR / f"{t}.jsonl").exists()]
SRC_LAYOUT = {"attrs": "attr", "python-dateutil": "dateutil"}  # recipe -> import name


def _spec(backend: str) -> EpisodeSpec:
    return EpisodeSpec(sandbox=SandboxConfig(backend=backend))  # type: ignore[arg-type]


def _tasks_of(recipe_name: str, tier: str) -> list[Task]:
    return [t for t in load_suite(tier) if str(t.seed.sdist).split("==")[0] == recipe_name]


def test_recipe_names_are_unique_and_src_layouts_known() -> None:
    names = [r.name for r in RECIPES]
    assert len(names) == len(set(names))
    assert {r.name for r in RECIPES if r.test_cmd == SRC_LAYOUT_CMD} == set(SRC_LAYOUT)


@pytest.mark.parametrize("tier", TIERS)
def test_records_match_their_recipe(tier: str) -> None:
    """A record built from a recipe runs the way the recipe says (env, test command, seed)."""
    by_sdist = {r.sdist: r for r in RECIPES}
    tasks = load_suite(tier)
    for task in tasks:
        recipe = by_sdist[str(task.seed.sdist)]
        assert (task.seed.sha256, task.env, task.test_cmd, task.tier) == (
            recipe.sha256,
            recipe.env,
            recipe.test_cmd,
            tier,
        ), task.instance_id
    for recipe in RECIPES:  # the generator found as many tasks as the recipe asks for
        count = sum(t.seed.sdist == recipe.sdist for t in tasks)
        assert count == (recipe.medium if tier == "medium" else recipe.hard), recipe.name


def test_only_rejects_unknown_libraries(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no recipe"):
        build_suite("medium", tmp_path, only=["not-a-library"])


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from shadowrl.models import load_tokenizer

    return load_tokenizer("smollm2")


# dateutil's gold run builds a canary plan over its ~2,000 tests under the watch (~5 min
# quiet, 12.6 min at load 10): slow; attrs keeps the src-layout check in the fast suite.
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n == "python-dateutil" else n
        for n in sorted(SRC_LAYOUT)
    ],
)
def test_src_layout_task_is_graded_on_the_workspace_copy(
    name: str, cache_dir: Path, tokenizer: Any
) -> None:
    """Gold resolves and noop does not, and the env holds no second copy of the library."""
    task = _tasks_of(name, "medium")[0]
    prepared = prepare(task, cache_dir)
    assert SRC_LAYOUT[name] not in env_modules(prepared.env)
    assert asyncio.run(run_reference("gold", prepared, tokenizer, _spec("local"))) == (True, 1.0)
    assert asyncio.run(run_reference("noop", prepared, tokenizer, _spec("local"))) == (False, 0.0)
