"""The one-pass stream: fresh instances, never the same bug twice, even across a resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowrl.tasks.env import build_env, env_python
from shadowrl.tasks.family.catalog import bug_bound, renderings
from shadowrl.tasks.family.splits import template_part
from shadowrl.tasks.family.stream import FamilyStream, bug_key
from shadowrl.tasks.family.template import Template
from shadowrl.tasks.task import load_tasks

# A template with room for only a handful of bugs, so the stream runs out of them.
SIGN = Template(
    id="stream_test_sign",
    module="sign",
    source='''
    """The sign of a number."""


    def sign(x):
        """-1, 0 or 1."""
        if x > 0:
            return 1
        if x < 0:
            return -1
        return 0
    ''',
    cases=lambda r: [("sign", (v,)) for v in (-9, -5, -1, 0, 1, 2, 7, 40)],
)


def _twin() -> Template:
    """SIGN with more renderings (so more bugs) under an id of the same part."""
    part = template_part(SIGN.id)
    tid = next(
        f"stream_test_sign_{i}"
        for i in range(100)
        if template_part(f"stream_test_sign_{i}") == part
    )
    source = SIGN.source.replace("return 1", "return $ONE")
    return Template(
        id=tid, module="sign", source=source, params={"ONE": ("1", "True")}, cases=SIGN.cases
    )


def test_the_stream_runs_out_rather_than_repeat(cache_dir: Path, tmp_path: Path) -> None:
    python = env_python(build_env(("pytest",), cache_dir))
    log = tmp_path / "stream.jsonl"
    part = template_part(SIGN.id)
    twin = _twin()
    stream = FamilyStream(python, cache_dir, log, part=part, pool=(SIGN, twin), attempts=40)
    drawn = []
    with pytest.raises(RuntimeError, match="no unseen bug"):
        while True:
            task, prepared = next(stream)
            drawn.append(task)
            assert prepared.workspace.is_dir() and (prepared.workspace / "sign.py").is_file()
    stream.close()
    keys = [bug_key(t) for t in drawn]
    assert len(drawn) >= 2 and len(set(keys)) == len(keys)
    # draws alternate between the two templates until SIGN's few bugs are used up; its
    # later turns pass to the twin, which has more, so the twin ends with the majority
    repos = [t.repo for t in drawn]
    assert repos[0] == SIGN.id or repos[0].endswith(SIGN.id)
    twins = sum(r.endswith(twin.id) for r in repos)
    assert twins > len(drawn) - twins
    # the static bound counts every bug before the checks that drop some: never exceeded
    assert len(renderings(twin)) == 2 and bug_bound(twin, part)[1] > bug_bound(SIGN, part)[1]
    assert len(drawn) <= bug_bound(SIGN, part)[1] + bug_bound(twin, part)[1]
    assert [t.instance_id for t in load_tasks(log)] == [t.instance_id for t in drawn]
    resumed = FamilyStream(python, cache_dir, log, part=part, pool=(SIGN, twin), attempts=40)
    assert resumed.position == len(drawn) and resumed.seen == set(keys)
    with pytest.raises(RuntimeError, match="no unseen bug"):
        next(resumed)  # every bug was used before the "crash": none comes back
    resumed.close()
    # bugs another stage used (SFT's demos) are skipped like drawn ones, log or no log
    fresh = FamilyStream(python, cache_dir, tmp_path / "s2.jsonl", part=part, pool=(SIGN, twin),
                         attempts=40, skip=drawn[:3])  # fmt: skip
    first = next(fresh)[0]
    fresh.close()
    assert bug_key(first) not in keys[:3] and fresh.seen >= set(keys[:3])


def test_a_streamed_run_has_no_list_to_screen() -> None:
    from pydantic import ValidationError

    from shadowrl.pipeline.config import PipelineConfig

    assert PipelineConfig(rl_stream=True).rl_stream
    with pytest.raises(ValidationError, match="no fixed list"):
        PipelineConfig(rl_stream=True, screen_samples=2)


def test_rl_templates_name_train_templates_of_a_stream() -> None:
    from pydantic import ValidationError

    from shadowrl.pipeline.config import PipelineConfig
    from shadowrl.tasks.family.catalog import pick, templates

    train = [t.id for t in templates("train")]
    chosen = [train[3], train[0], train[3]]
    assert [t.id for t in pick("train", chosen)] == [train[3], train[0]]
    assert [t.id for t in pick("train", [])] == train
    assert PipelineConfig(rl_stream=True, rl_templates=chosen).rl_templates == chosen
    dev = templates("dev")[0].id
    with pytest.raises(ValidationError, match="are not train templates") as bad:
        PipelineConfig(rl_stream=True, rl_templates=[train[0], "no_such", dev])
    assert str(sorted([dev, "no_such"])) in str(bad.value) and train[0] not in str(bad.value)
    with pytest.raises(ValidationError, match="needs rl_stream"):
        PipelineConfig(rl_templates=[train[0]])


def test_the_stream_draws_only_the_named_operators(cache_dir: Path, tmp_path: Path) -> None:
    import random

    from shadowrl.tasks.mutate import ALL_OPERATORS, candidate_mutations

    python = env_python(build_env(("pytest",), cache_dir))
    part = template_part(SIGN.id)
    module = SIGN.render(random.Random(0)).source

    def kinds(log: str, operators: tuple[str, ...] = ()) -> list[str]:
        stream = FamilyStream(
            python, cache_dir, tmp_path / log, part=part, pool=(SIGN,), attempts=40,
            operators=operators,
        )  # fmt: skip
        out = []
        with pytest.raises(RuntimeError, match="no unseen bug"):
            while True:
                out.append(next(stream)[0].source.split("ast:", 1)[1].split("@", 1)[0])
        stream.close()
        return out

    def names(group: str) -> set[str]:
        return {m.operator.replace(" ", "_") for m in candidate_mutations(module, (group,))}

    every = set(kinds("all.jsonl"))
    # an operator whose bugs this part has beside others', so a filter doing nothing is caught
    group = next(g for g in ALL_OPERATORS if names(g) & every and every - names(g))
    only = kinds("one.jsonl", (group,))
    assert only and set(only) <= names(group)
    with pytest.raises(ValueError, match="unknown mutation operators"):
        FamilyStream(python, cache_dir, tmp_path / "t.jsonl", pool=(SIGN,), operators=("nope",))


def test_rl_operators_name_known_operators_of_a_stream() -> None:
    from pydantic import ValidationError

    from shadowrl.pipeline.config import PipelineConfig

    assert PipelineConfig(rl_stream=True, rl_operators=["binary"]).rl_operators == ["binary"]
    with pytest.raises(ValidationError, match=r"unknown rl_operators \['nope'\]"):
        PipelineConfig(rl_stream=True, rl_operators=["binary", "nope"])
    with pytest.raises(ValidationError, match="needs rl_stream"):
        PipelineConfig(rl_operators=["binary"])
