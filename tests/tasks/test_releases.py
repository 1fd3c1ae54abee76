"""The `releases` suite: real bugs fixed between consecutive releases of src-layout libraries.

The records must be what their recipes say (the fix is the release's own edit, the
seeds are committed), and every task must be solved by its gold patch and by nothing
else, through the real harness and grader.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from shadowrl.episode import EpisodeSpec, reference_verdict
from shadowrl.sandbox import SandboxConfig
from shadowrl.tasks.load import load_suite
from shadowrl.tasks.patch import apply_patch
from shadowrl.tasks.prepare import prepare
from shadowrl.tasks.releases import RELEASES, SEEDS, apply_fix

BY_ID = {r.instance_id: r for r in RELEASES}

LOCAL = EpisodeSpec(sandbox=SandboxConfig(backend="local"))


def test_records_are_their_recipes_with_committed_seeds() -> None:
    tasks = load_suite("releases")
    assert [t.instance_id for t in tasks] == [r.instance_id for r in RELEASES]
    assert len({t.repo for t in tasks}) >= 8  # eight libraries
    for task in tasks:
        r = BY_ID[task.instance_id]
        seed = Path(str(task.seed.path))
        assert seed.parent == SEEDS and not (seed / "docs").exists()
        assert all((seed / path).exists() for path in r.keep)
        assert task.allowed_primitives == ()  # maintainers' fixes need no allowance
        assert task.source == f"release-diff:{r.name} {r.before}->{r.after}"
        source = (seed / r.source).read_text()
        fixed = apply_patch({r.source: source}, task.patch)[r.source]
        assert fixed is not None and fixed == apply_fix(r, source, fixed)  # the recipe's hunks
        assert {p.split("::")[0] for p in task.FAIL_TO_PASS} <= set(r.tests)
        assert set(task.FAIL_TO_PASS).isdisjoint(task.PASS_TO_PASS) and task.PASS_TO_PASS
    for seed in SEEDS.iterdir():  # a few hundred KB per seed at most
        assert sum(f.stat().st_size for f in seed.rglob("*")) < 300_000, seed.name


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from shadowrl.models import load_tokenizer

    return load_tokenizer("smollm2")


def test_gold_resolves_and_noop_fails_one_real_release(cache_dir: Path, tokenizer: Any) -> None:
    """MarkupSafe 2.1.2's fix, graded by its own new assertions (the fast check of the suite)."""
    (task,) = [t for t in load_suite("releases") if t.instance_id == "markupsafe__2.1.2"]
    prepared = prepare(task, cache_dir)
    gold = asyncio.run(reference_verdict("gold", prepared, tokenizer, LOCAL))
    assert gold.resolved and gold.status == "ran", gold.log_tail
    noop = asyncio.run(reference_verdict("noop", prepared, tokenizer, LOCAL))
    assert not noop.resolved and noop.status == "ran"
    assert noop.failing == dict.fromkeys(task.FAIL_TO_PASS, "failed")
    assert "<!-- comment with newlines -->" in noop.log_tail  # the release's new assertion


@pytest.mark.slow
def test_shadowrl_eval_gold_resolves_every_release_and_noop_none(tmp_path: Path) -> None:
    from shadowrl.commands import eval as eval_command
    from shadowrl.commands.config import Config
    from shadowrl.eval.result import EvalResult

    cache = os.environ.get(
        "SHADOWRL_TEST_CACHE", str(Path(tempfile.gettempdir()) / "shadowrl-test-cache")
    )
    config = Config.model_validate({"tasks": {"cache_dir": cache}})
    parser = argparse.ArgumentParser()
    eval_command.add_args(parser)
    rates = {}
    tasks = {t.instance_id: t for t in load_suite("releases")}
    for policy in ("gold", "noop"):
        argv = ["--suite", "releases", "--policy", policy, "--samples", "1", "--no-progress"]
        assert (
            eval_command.run(parser.parse_args([*argv, "--out", str(tmp_path / policy)]), config)
            == 0
        )
        result = EvalResult.load(tmp_path / policy)
        assert result.overall.tasks == len(RELEASES) and result.errors == 0
        rates[policy] = result.overall.pass1.value
        for t in result.tasks:
            (s,) = t.samples
            assert s.grading is not None and s.grading.status == "ran"
            at_fault = set() if policy == "gold" else set(tasks[t.instance_id].FAIL_TO_PASS)
            assert set(s.grading.failing) == at_fault
    assert rates == {"gold": 1.0, "noop": 0.0}
