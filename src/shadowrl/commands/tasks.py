"""`shadowrl tasks ...`: generate, validate and export task suites.

    shadowrl tasks make --seed toolz==1.0.0 --n 10 --tier medium --out toolz.jsonl
    shadowrl tasks make --seed ./myrepo --tests tests/test_core.py --n 5 --tier hard --out x.jsonl
    shadowrl tasks easy --out easy.jsonl           # rebuild the HumanEval tier
    shadowrl tasks wider --per-problem 4            # held-out problems x 5 bugs: easy-wide
    shadowrl tasks suite --tier medium              # rebuild a built-in tier from its recipes
    shadowrl tasks releases                         # rebuild the releases suite (real bug fixes)
    shadowrl tasks long                             # rebuild the long tier (needs summaries)
    shadowrl tasks validate --suite medium          # gold must resolve 100%, noop 0%
    shadowrl tasks export --suite easy --out easy.swebench.jsonl
    shadowrl tasks family --part train --n 64 --out fam.jsonl  # fresh bug-fix family tasks
    shadowrl tasks export --suite family:dev --format shadowrl --out dev.jsonl

Heavy imports happen inside the command functions so `shadowrl --help` stays instant.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.commands.config import Config
from shadowrl.tasks.family.splits import PARTS

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from rich.progress import Progress

    from shadowrl.episode import EpisodeSpec
    from shadowrl.tasks import Task
    from shadowrl.tasks.prepare import PreparedTask
    from shadowrl.tasks.verify import Verdict

log = logging.getLogger(__name__)
TIERS = {"easy": (1, "easy"), "medium": (1, "medium"), "hard": (2, "hard")}  # mutations, statement


def add_args(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    make = sub.add_parser("make", help="generate validated tasks by AST bug injection")
    make.add_argument("--seed", required=True, help="'name==version' (PyPI sdist) or a directory")
    make.add_argument("--n", type=int, default=10, help="number of tasks to keep")
    make.add_argument("--tier", choices=sorted(TIERS), default="medium")
    make.add_argument("--mutations", type=int, default=0, help="bugs per task (0 = tier default)")
    make.add_argument("--out", required=True, help="JSONL file to write")
    make.add_argument("--repo", default="", help="repo name recorded in the tasks")
    make.add_argument(
        "--module", action="append", default=[], help="source file to mutate (repeatable)"
    )
    make.add_argument("--tests", action="append", default=[], help="test file to run (repeatable)")
    make.add_argument("--env", action="append", default=[], help="pip requirement (default pytest)")
    make.add_argument("--rng-seed", type=int, default=0)
    make.add_argument("--workers", type=int, default=2)
    make.add_argument("--timeout", type=float, default=60.0, help="test run limit, seconds")
    easy = sub.add_parser("easy", help="rebuild the HumanEval easy tier")
    easy.add_argument("--out", default="", help="JSONL file (default: the built-in suite)")
    easy.add_argument("--limit", type=int, default=None, help="first N problems only")
    easy.add_argument("--workers", type=int, default=2)
    wide = sub.add_parser(
        "wider", help="easy-tier problems of one split with more bugs each (a larger eval set)"
    )
    wide.add_argument("--per-problem", type=int, default=4, help="extra bugs per problem")
    wide.add_argument("--split", choices=["train", "heldout"], default="heldout")
    wide.add_argument("--out", default="", help="JSONL file (default: the built-in easy-wide)")
    wide.add_argument("--workers", type=int, default=2)
    suite = sub.add_parser("suite", help="regenerate the built-in medium or hard suite")
    suite.add_argument("--tier", choices=["medium", "hard"], required=True)
    suite.add_argument("--workers", type=int, default=2)
    sub.add_parser("releases", help="regenerate the built-in releases suite from its recipes")
    sub.add_parser("long", help="regenerate the built-in long tier (spec and bug apart)")
    validate = sub.add_parser("validate", help="gold must resolve every task, noop none")
    validate.add_argument("--suite", required=True, help="built-in suite name or JSONL path")
    validate.add_argument("--limit", type=int, default=None)
    validate.add_argument("--backend", choices=["auto", "overlay", "local"], default="auto")
    export = sub.add_parser("export", help="write a suite as JSONL (SWE-bench or ours)")
    export.add_argument("--suite", required=True, help="any suite name, e.g. family:dev@32")
    export.add_argument("--out", required=True)
    export.add_argument(
        "--format",
        choices=["swebench", "shadowrl"],
        default="swebench",
        help="'shadowrl': our records, seed directories copied beside the file (runnable)",
    )
    family = sub.add_parser("family", help="generate fresh tasks of the bug-fix family")
    family.add_argument("--part", choices=PARTS, default="train")
    family.add_argument("--n", type=int, default=16, help="instances to generate")
    family.add_argument("--seed", type=int, default=0, help="the generator's seed")
    family.add_argument("--out", help="JSONL file (seed copied beside it)")
    family.add_argument(
        "--capacity",
        action="store_true",
        help="print how many distinct bugs each template of --part can give at most, instead",
    )
    family.add_argument("--workers", type=int, default=2)


def _progress_callback(label: str) -> tuple[Progress, Callable[[Task | None], None]]:
    from rich.progress import Progress, SpinnerColumn, TextColumn

    bar = Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.fields[stats]}")
    )
    counts = {"kept": 0, "rejected": 0}
    tid = bar.add_task(label, total=None, stats="")

    live = bar.console.is_terminal  # without one (nohup, CI) the spinner prints nothing

    def on_result(task: Task | None) -> None:
        counts["kept" if task is not None else "rejected"] += 1
        stats = f"kept {counts['kept']}, rejected {counts['rejected']}"
        bar.update(tid, stats=stats)
        if not live and (counts["kept"] + counts["rejected"]) % 25 == 0:
            log.info("%s: %s", label, stats)

    return bar, on_result


def _make(args: argparse.Namespace, cache: Path) -> int:
    from shadowrl.tasks import MakeSpec, Seed, build_env, env_python, make_tasks, save_tasks
    from shadowrl.tasks.prepare import pin_sdist, seed_dir

    is_dir = Path(args.seed).is_dir()
    seed = Seed(path=str(Path(args.seed).resolve())) if is_dir else pin_sdist(args.seed, cache)
    mutations, statement = TIERS[args.tier]
    spec = MakeSpec(
        seed=seed,
        repo=args.repo or (Path(args.seed).name if is_dir else args.seed.split("==")[0]),
        tier=args.tier,
        n=args.n,
        mutations=args.mutations or mutations,
        modules=tuple(args.module),
        tests=tuple(args.tests),
        env=tuple(args.env) or ("pytest",),
        rng_seed=args.rng_seed,
        timeout_s=args.timeout,
        statement=statement,
    )
    base = seed_dir(seed, cache)
    python = env_python(build_env(spec.env, cache))
    bar, on_result = _progress_callback(f"making {args.tier} tasks from {args.seed}")
    with bar:
        tasks = make_tasks(spec, base, python, workers=args.workers, on_result=on_result)
    save_tasks(tasks, args.out)
    print(f"wrote {len(tasks)} tasks to {args.out}")
    return 0 if tasks else 1


def _easy(args: argparse.Namespace, cache: Path) -> int:
    from shadowrl.tasks import SUITES_DIR, build_easy, build_env, env_python, save_tasks

    out = Path(args.out) if args.out else SUITES_DIR / "easy.jsonl"
    python = env_python(build_env(("pytest",), cache))
    bar, on_result = _progress_callback("making easy tasks from HumanEval")
    with bar:
        tasks = build_easy(
            out.parent / "humaneval",
            python,
            workers=args.workers,
            limit=args.limit,
            on_result=on_result,
        )
    save_tasks(tasks, out)
    print(f"wrote {len(tasks)} tasks to {out}")
    return 0


def _wider(args: argparse.Namespace, cache: Path) -> int:
    from shadowrl.tasks import (
        SUITES_DIR,
        build_env,
        build_wider,
        env_python,
        load_suite,
        save_tasks,
    )

    if args.per_problem < 1:
        raise SystemExit("--per-problem must be at least 1")
    out = Path(args.out) if args.out else SUITES_DIR / "easy-wide.jsonl"
    python = env_python(build_env(("pytest",), cache))
    bar, on_result = _progress_callback(f"adding bugs to the {args.split} easy problems")
    with bar:
        tasks = build_wider(
            load_suite("easy"),
            python,
            per_problem=args.per_problem,
            split=args.split,
            workers=args.workers,
            on_result=on_result,
        )
    save_tasks(tasks, out)
    problems = len({t.repo for t in tasks})
    print(f"wrote {len(tasks)} tasks of {problems} problems to {out}")
    return 0


def _suite(args: argparse.Namespace, cache: Path) -> int:
    from shadowrl.tasks import build_suite

    bar, on_result = _progress_callback(f"making the {args.tier} suite")
    with bar:
        tasks = build_suite(args.tier, cache, workers=args.workers, on_result=on_result)
    print(f"wrote {len(tasks)} {args.tier} tasks")
    return 0


def _releases(args: argparse.Namespace, cache: Path) -> int:
    from shadowrl.tasks import RELEASES_SUITE, build_releases

    tasks = build_releases(cache)
    print(f"wrote {len(tasks)} tasks to {RELEASES_SUITE}")
    return 0


def _long(args: argparse.Namespace, cache: Path) -> int:
    from shadowrl.tasks import SEEDS_DIR, build_long

    tasks = build_long()
    print(f"wrote {len(tasks)} tasks to {SEEDS_DIR.parent / 'long.jsonl'}")
    return 0


def _validate(args: argparse.Namespace, cache: Path) -> int:
    from rich.progress import track

    from shadowrl.episode import EpisodeSpec
    from shadowrl.models import load_tokenizer
    from shadowrl.sandbox import SandboxConfig
    from shadowrl.tasks import load_suite, stratified
    from shadowrl.tasks.prepare import prepare

    tokenizer = load_tokenizer("smollm2")
    spec = EpisodeSpec(sandbox=SandboxConfig(backend=args.backend))
    bad = []
    tasks = stratified(load_suite(args.suite), args.limit)
    for done, task in enumerate(track(tasks, description=f"validating {args.suite}")):
        # the bar draws only on a terminal; a log line per task shows progress in a file too
        log.info(
            "validating %s: %d/%d done, next %s", args.suite, done, len(tasks), task.instance_id
        )
        found = _faults(task, prepare(task, cache), tokenizer, spec)
        # each verdict as it comes, so a run stopped part-way still says what it found
        log.info("validated %s: %s", task.instance_id, "NOT valid" if found else "valid")
        bad += found
    family = any(t.tier == "family" for t in tasks)
    verdict = "gold 100%, noop 0%" + (", special-case 0%" if family else "")
    print("\n\n".join(bad) or f"all {len(tasks)} tasks valid: {verdict}")
    return 1 if bad else 0


def _faults(task: Task, prepared: PreparedTask, tokenizer: Any, spec: EpisodeSpec) -> list[str]:
    """What is wrong with one task: gold not paid, noop or a special-cased report paid."""
    import asyncio

    from shadowrl.episode import reference_verdict
    from shadowrl.tasks.verify import gold_violations

    # Named here, not just as a gold failure below: the fix is a task's allowed_primitives.
    bad = [f"{task.instance_id}: gold {v}" for v in gold_violations(task, prepared.workspace)]
    gold = asyncio.run(reference_verdict("gold", prepared, tokenizer, spec))
    noop = asyncio.run(reference_verdict("noop", prepared, tokenizer, spec))
    if not gold.resolved or gold.reward != 1.0:
        bad.append(_at_fault(task.instance_id, "gold fails", gold, gold.failing))
    if noop.resolved or noop.reward != 0.0:
        passing = {i: v for i, v in noop.fail_to_pass.items() if v == "passed"}
        bad.append(_at_fault(task.instance_id, "noop passes", noop, passing))
    if task.tier == "family":  # a hard-coded report must earn nothing either
        special = asyncio.run(reference_verdict("special-case", prepared, tokenizer, spec))
        if special.resolved or special.reward != 0.0 or special.voided_by:
            bad.append(_at_fault(task.instance_id, "special-case earns", special, {}))
    return bad


def _at_fault(instance_id: str, what: str, verdict: Verdict, ids: Mapping[str, str]) -> str:
    """What `tasks validate` prints for a bad task: the ids at fault and the log's tail."""
    lines = [f"{instance_id}: {what} (run: {verdict.status}, reward {verdict.reward})"]
    lines += [f"  {i}: {outcome}" for i, outcome in ids.items()]
    lines += [f"  tampering: {hit}" for hit in verdict.tampered]
    tail = "\n".join("  | " + ln for ln in verdict.log_tail.splitlines())
    return "\n".join([*lines, "  test log (tail):", tail])


def _export(args: argparse.Namespace, cache: Path) -> int:
    from shadowrl.tasks import export_swebench, load_suite, save_portable

    tasks = load_suite(args.suite)
    if args.format == "shadowrl":
        save_portable(tasks, Path(args.out))
    else:
        export_swebench(tasks, args.out)
    print(f"wrote {len(tasks)} {args.format} records to {args.out}")
    return 0


def _capacity(part: str) -> int:
    from shadowrl.tasks.family.catalog import bug_bound, templates

    rows = sorted((*bug_bound(t, part), t.id) for t in templates(part))  # type: ignore[arg-type]
    for groups, bugs, tid in rows:
        print(f"{tid:28} {groups:4} groups {bugs:5} bugs at most")
    total_groups, total_bugs = sum(r[0] for r in rows), sum(r[1] for r in rows)
    print(f"family:{part}: {len(rows)} templates, {total_groups} groups, {total_bugs} bugs at most")
    return 0


def _family(args: argparse.Namespace, cache: Path) -> int:
    from shadowrl.tasks import build_env, env_python, save_portable
    from shadowrl.tasks.family.suite import generate

    if args.capacity:
        return _capacity(args.part)
    if not args.out:
        raise SystemExit("tasks family: --out is required (or --capacity)")
    python = env_python(build_env(("pytest",), cache))
    tasks = generate(args.part, args.n, python, seed=args.seed, workers=args.workers)
    save_portable(tasks, Path(args.out))
    templates = len({t.repo for t in tasks})
    print(f"wrote {len(tasks)} family:{args.part} tasks of {templates} templates to {args.out}")
    return 0


ACTIONS = {
    "make": _make,
    "easy": _easy,
    "wider": _wider,
    "suite": _suite,
    "releases": _releases,
    "long": _long,
    "validate": _validate,
    "export": _export,
    "family": _family,
}


def run(args: argparse.Namespace, config: Config) -> int:
    cache = Path(config.tasks.cache_dir).expanduser().resolve()
    return ACTIONS[args.action](args, cache)
