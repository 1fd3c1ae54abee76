"""The built-in `releases` suite: real bugs that real releases fixed.

Each recipe (`release_recipes.py`) names two consecutive releases of a small,
pure-Python library with its own pytest suite. Its task is the bug the later
release fixed, graded by the later release's own tests:

- the seed is the earlier sdist, stripped to what the tests need (the recipe's
  `keep` paths less its `drop` patterns, the pytest/packaging config files, the
  licence) and committed under `data/suites/releases/<name>-<version>/`;
- `patch` is the fix, cut from the release diff: the hunks of the source file that
  make the fix, none of the version bump or typing-only edits around them (each
  recipe's `fix` pairs are checked against the later sdist's text);
- `test_patch` is the later release's change to the test files it touched;
- FAIL_TO_PASS are the ids of those files that fail on the seed and pass with the
  fix, PASS_TO_PASS every other id that passes on both, all found by running the
  tests through the grader's own runner (`runner.py`).

No record allows a primitive (`allowed_primitives` is empty): these are the
maintainers' own fixes, and a grader that voids one is wrong, not the fix.
`build_releases(cache)` downloads both sdists with `pip download` and rewrites the
suite; the committed files are its output, so evaluating never downloads an sdist.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path

from shadowrl.tasks.load import load_suite
from shadowrl.tasks.patch import make_patch
from shadowrl.tasks.release_recipes import RELEASES, Release
from shadowrl.tasks.task import SUITES_DIR, Seed, Task, hash_split, save_tasks

SUITE = SUITES_DIR / "releases.jsonl"
SEEDS = SUITES_DIR / "releases"
_KEEP_ROOT = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini")


def _strip_copy(r: Release, src: Path, dest: Path) -> None:
    """The sdist tree minus docs, changelogs and build metadata: sources, tests, config."""
    dest.mkdir(parents=True)
    for name in (*_KEEP_ROOT, *(p.name for p in src.glob("LICENSE*"))):
        if (src / name).is_file():
            shutil.copy2(src / name, dest / name)
    ignore = shutil.ignore_patterns("*.egg-info", "__pycache__", "*.pyc", ".pytest_cache", *r.drop)
    for sub in r.keep:
        (dest / sub).parent.mkdir(parents=True, exist_ok=True)
        if (src / sub).is_dir():
            shutil.copytree(src / sub, dest / sub, ignore=ignore)
        else:
            shutil.copy2(src / sub, dest / sub)


def apply_fix(r: Release, before: str, after: str) -> str:
    text = before
    for old, new in r.fix:
        if text.count(old) != 1 or new not in after:
            raise ValueError(f"{r.name}: fix hunk {old!r} is not one edit of the release diff")
        text = text.replace(old, new)
    return text


def _read(root: Path, paths: tuple[str, ...]) -> dict[str, str | None]:
    return {p: (root / p).read_text() if (root / p).is_file() else None for p in paths}


def make_release_task(r: Release, before_dir: Path, after_dir: Path, cache: Path) -> Task:
    """Copy the stripped seed into the suite and find the task's ids by running its tests."""
    from shadowrl.tasks.env import build_env, env_python
    from shadowrl.tasks.prepare import apply_patch_to_dir
    from shadowrl.tasks.runner import run_tests_local

    seed = SEEDS / f"{r.name.lower()}-{r.before}"
    shutil.rmtree(seed, ignore_errors=True)
    _strip_copy(r, before_dir, seed)
    old_src = (seed / r.source).read_text()
    patch = make_patch(
        {r.source: old_src}, {r.source: apply_fix(r, old_src, (after_dir / r.source).read_text())}
    )
    test_patch = make_patch(_read(seed, r.tests), _read(after_dir, r.tests))
    probe = Task(
        instance_id=r.instance_id, repo=r.repo, problem_statement=r.statement, patch=patch,
        test_patch=test_patch, FAIL_TO_PASS=("-",), seed=Seed(path=str(seed)), tier="release",
        test_cmd=r.test_cmd, env=r.env, timeout_s=120,  # a shell string, split on load
    )  # fmt: skip
    python = env_python(build_env(r.env, cache))
    runs = {}
    with tempfile.TemporaryDirectory(prefix="shadowrl-release-") as tmp:
        for name, patches in (("bug", [test_patch]), ("fix", [test_patch, patch])):
            work = Path(tmp) / name
            shutil.copytree(seed, work)
            for p in patches:
                apply_patch_to_dir(work, p)
            runs[name] = run_tests_local(probe, work, python, r.test_paths, Path(tmp)).outcomes
    bug, fix = runs["bug"], runs["fix"]
    f2p = sorted(i for i, v in fix.items() if v == "passed" and bug.get(i) != "passed"
                 and i.split("::")[0] in r.tests)  # fmt: skip
    p2p = sorted(i for i, v in fix.items() if v == "passed" and bug.get(i) == "passed")
    if not f2p:
        raise RuntimeError(f"{r.instance_id}: no test of {r.tests} fails before the fix")
    return probe.model_copy(
        update={
            "FAIL_TO_PASS": tuple(f2p),
            "PASS_TO_PASS": tuple(p2p),
            "source": f"release-diff:{r.name} {r.before}->{r.after}",
            "split": hash_split(r.instance_id),
        }
    )


def build_releases(cache: Path, only: Collection[str] = ()) -> list[Task]:
    """Regenerate `releases.jsonl` and its seeds from `RELEASES` (downloads the sdists);
    with `only` (instance ids), rebuild those and keep every other record as it is."""
    from shadowrl.tasks.prepare import pin_sdist, seed_dir

    kept = {t.instance_id: t for t in load_suite("releases")} if only else {}
    tasks = []
    for r in RELEASES:
        if only and r.instance_id not in only:
            tasks.append(kept[r.instance_id])
            continue
        before, after = (
            seed_dir(pin_sdist(f"{r.name}=={v}", cache), cache) for v in (r.before, r.after)
        )
        tasks.append(make_release_task(r, before, after, cache))
    save_tasks(tasks, SUITE)
    return tasks
