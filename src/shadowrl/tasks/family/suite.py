"""Fixed, reproducible suites of the family: the first N instances of one part.

Instance i of a part is a pure function of (part, seed, i): template number i mod the
part's templates (so any prefix is stratified by template), then the first valid
attempt of a seeded sequence; an attempt whose bug another instance of the suite
already has is skipped, so no bug repeats. Suites are generated once and kept under
the task cache, keyed by the family's own code, so a changed template or operator
never reads back a stale file.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from shadowrl.tasks.family.catalog import pick
from shadowrl.tasks.family.generate import SEED_DIR, Instance, attempt
from shadowrl.tasks.family.splits import PARTS, Part
from shadowrl.tasks.family.template import Template
from shadowrl.tasks.mutate import ALL_OPERATORS
from shadowrl.tasks.task import Seed, Task, load_tasks, save_tasks

TRIES = 120  # attempts per instance before the suite gives up on it
SIZES: dict[Part, int] = {"train": 200, "dev": 48, "heldout-seeds": 64, "heldout-templates": 120}
DEFAULT_CACHE = Path("~/.cache/shadowrl/tasks")


@dataclass(frozen=True)
class SuiteName:
    """`family[:part][@n][/t1,t2,...]`: `family` alone is the dev part (pilots and tuning
    use only dev); a `/` list keeps the part's instances on those templates only."""

    part: Part
    n: int
    templates: tuple[str, ...] = ()

    @classmethod
    def parse(cls, name: str) -> SuiteName | None:
        """None when `name` is no family suite name (a path such as `family/x.jsonl` is
        none: template ids are identifiers)."""
        name, slash, listed = name.partition("/")
        ids = tuple(listed.split(",")) if slash else ()
        if not all(i.isidentifier() for i in ids) or (slash and not ids):
            return None
        head, _, size = name.partition("@")
        base, _, part = head.partition(":")
        if base != "family" or (part and part not in PARTS) or (size and not size.isdigit()):
            return None
        chosen: Part = part or "dev"  # type: ignore[assignment,unused-ignore]  # in PARTS
        return cls(chosen, int(size) if size else SIZES[chosen], ids)

    def pool(self) -> tuple[Template, ...]:
        """The templates its instances take turns over (an unknown id is an error naming it)."""
        return pick(self.part, list(self.templates))

    def file_name(self, seed: int) -> str:
        """Its cache file: the listed templates, in order, change what is generated."""
        listed = ",".join(self.templates)
        tag = f"-t{hashlib.sha256(listed.encode()).hexdigest()[:8]}" if listed else ""
        return f"{self.part}-s{seed}-n{self.n}{tag}.jsonl"


def attempts(
    part: Part,
    index: int,
    seed: int,
    python: Path,
    seen: Collection[str] = (),
    ids: Sequence[str] = (),
) -> Iterator[Instance]:
    """The valid attempts of instance `index` of `part` whose bug is not in `seen`, in
    their seeded order, on its own template (`index` mod the part's templates, or mod
    those `ids` names)."""
    pool = pick(part, list(ids))
    if not pool:
        raise ValueError(f"the family has no template in part {part!r}")
    return tries(pool[index % len(pool)], part, f"{seed}:{part}:{index}", 0, TRIES, python, seen)


def tries(
    template: Template,
    part: Part,
    key: str,
    shift: int,
    n: int,
    python: Path,
    seen: Collection[str],
    operators: Sequence[str] = ALL_OPERATORS,
) -> Iterator[Instance]:
    """The valid ones of `n` seeded attempts at `template`; attempt j's seed is
    `key:j`, suffixed with the shift that moved the draw onto this template."""
    for j in range(n):
        rng = random.Random(f"{key}:{j}" + (f":{shift}" if shift else ""))
        found = attempt(template, part, rng, python, seen, operators)
        if found is not None:
            yield found


def draw(
    pool: Sequence[Template],
    part: Part,
    index: int,
    key: str,
    n: int,
    python: Path,
    seen: Collection[str],
    spent: set[str],
    operators: Sequence[str] = ALL_OPERATORS,
) -> Instance:
    """Draw `index` with an unseen bug by `operators`: its own template first (round-robin
    over `pool`), then the next ones; a template without one in `n` attempts joins `spent`
    for good."""
    for shift in range(len(pool)):
        template = pool[(index + shift) % len(pool)]
        if template.id in spent:
            continue
        found = tries(template, part, f"{key}:{index}", shift, n, python, seen, operators)
        inst = next(found, None)
        if inst is not None:
            return inst
        spent.add(template.id)
    raise RuntimeError(f"family:{part} has no unseen bug left for draw {index}")


def _first(args: tuple[Part, int, int, Path, tuple[str, ...]]) -> Instance | None:
    part, index, seed, python, ids = args  # ids, not templates: they cross a process
    return next(attempts(part, index, seed, python, ids=ids), None)  # a repeat: redrawn below


def generate(
    part: Part,
    n: int,
    python: Path,
    *,
    seed: int = 0,
    workers: int = 2,
    ids: Sequence[str] = (),
) -> list[Task]:
    """The first `n` instances of `part` (on the templates `ids` names, default all of the
    part's), each a different bug, validated.

    A template has finitely many bugs (its renderings times its sites and operators in
    this part); once one has none left, its instances move on to the next template that
    has, so a long suite leans towards the richer templates instead of failing."""
    pool = pick(part, list(ids))
    jobs = [(part, i, seed, python, tuple(ids)) for i in range(n)]
    with ProcessPoolExecutor(max_workers=workers) as procs:
        firsts = list(procs.map(_first, jobs))
    seen: set[str] = set()
    spent: set[str] = set()  # ids of templates with no unseen bug left
    tasks: list[Task] = []
    for i, found in enumerate(firsts):
        if found is not None and found.bug_key not in seen:
            inst = found
        else:
            inst = draw(pool, part, i, f"{seed}:{part}", TRIES, python, seen, spent)
        seen.add(inst.bug_key)
        tasks.append(inst.task)
    return tasks


def code_digest() -> str:
    """Digest of the code that decides what the family generates."""
    from shadowrl.tasks import mutate

    here = Path(__file__).parent
    files = [*sorted(here.glob("*.py")), Path(mutate.__file__)]
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


def family_suite(name: SuiteName, cache_dir: Path = DEFAULT_CACHE, seed: int = 0) -> list[Task]:
    """The tasks of a family suite, generated on first use and cached."""
    from shadowrl.tasks.env import build_env, env_python

    cache = cache_dir.expanduser().resolve()
    name.pool()  # an unknown template id fails here, before any environment is built
    path = cache / "family" / code_digest() / name.file_name(seed)
    if not path.exists():
        python = env_python(build_env(("pytest",), cache))
        # atomic (`save_tasks`): two processes may race, both finish, either file is whole
        save_tasks(generate(name.part, name.n, python, seed=seed, ids=name.templates), path)
    # Every family task starts from this install's seed directory; a cache entry written by
    # another checkout of the same code names that checkout's, which may be gone.
    seed_dir = Seed(path=str(SEED_DIR))
    return [t.model_copy(update={"seed": seed_dir}) for t in load_tasks(path)]


def family_split(name: str, split: str | None) -> list[Task] | None:
    """`load_suite` of a family name (None: `name` is none): the named part, its train
    split the train part, its held-out split the named part unless that is train."""
    parsed = SuiteName.parse(name)
    if parsed is None:
        return None
    if split == "train" and parsed.part != "train":
        # another part's train split is the whole train part: its listed ids are not train's
        parsed = SuiteName("train", SIZES["train"])
    elif split == "heldout" and parsed.part == "train":
        return []
    return family_suite(parsed)
