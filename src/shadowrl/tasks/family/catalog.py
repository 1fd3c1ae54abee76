"""Every template of the family, and which part of the splits each one serves."""

from __future__ import annotations

import itertools
import random
from functools import cache

from shadowrl.tasks.family import (
    templates_algorithms,
    templates_algorithms_more,
    templates_collections,
    templates_collections_more,
    templates_dates,
    templates_dates_more,
    templates_grid,
    templates_ledger,
    templates_misc,
    templates_misc_more,
    templates_money,
    templates_money_more,
    templates_numbers,
    templates_numbers_more,
    templates_parsing,
    templates_parsing_more,
    templates_rules,
    templates_schedule,
    templates_text,
    templates_text_more,
)
from shadowrl.tasks.family.splits import Part, group_part, site, template_part
from shadowrl.tasks.family.template import Template
from shadowrl.tasks.mutate import mutants

TEMPLATES: tuple[Template, ...] = (
    *templates_text.TEMPLATES,
    *templates_text_more.TEMPLATES,
    *templates_dates.TEMPLATES,
    *templates_dates_more.TEMPLATES,
    *templates_money.TEMPLATES,
    *templates_money_more.TEMPLATES,
    *templates_parsing.TEMPLATES,
    *templates_parsing_more.TEMPLATES,
    *templates_collections.TEMPLATES,
    *templates_collections_more.TEMPLATES,
    *templates_algorithms.TEMPLATES,
    *templates_algorithms_more.TEMPLATES,
    *templates_numbers.TEMPLATES,
    *templates_numbers_more.TEMPLATES,
    *templates_misc.TEMPLATES,
    *templates_misc_more.TEMPLATES,
    *templates_ledger.TEMPLATES,
    *templates_schedule.TEMPLATES,
    *templates_rules.TEMPLATES,
    *templates_grid.TEMPLATES,
)


def by_id() -> dict[str, Template]:
    """Templates by id; two with one id are an error."""
    found: dict[str, Template] = {}
    for t in TEMPLATES:
        if t.id in found:
            raise ValueError(f"two templates with the id {t.id!r}")
        found[t.id] = t
    return found


@cache
def templates(part: Part) -> tuple[Template, ...]:
    """The templates `part` draws from: held-out seeds come from the train templates, those
    with at least one near-duplicate group held out (and train from those with one left)."""
    home = "train" if part == "heldout-seeds" else part
    return tuple(t for t in TEMPLATES if template_part(t.id) == home and part in _parts(t))


def pick(part: Part, ids: list[str]) -> tuple[Template, ...]:
    """The templates of `part` named by `ids`, in order (all of them when empty); an id
    that is not one of `part`'s is an error naming it."""
    mine = {t.id: t for t in templates(part)}
    unknown = sorted(set(ids) - set(mine))
    if unknown:
        raise ValueError(
            f"{unknown} are not {part} templates of the family (it has {len(mine)}: "
            f"`shadowrl tasks family --part {part} --capacity` lists them)"
        )
    return tuple(mine[i] for i in dict.fromkeys(ids)) or tuple(mine.values())


def _parts(template: Template) -> set[Part]:
    """The parts of a template's near-duplicate groups (a site names one node in every
    rendering, so one rendering tells)."""
    source = template.render(random.Random(0)).source
    return {group_part(template.id, site(source, m), m.operator) for m, _ in mutants(source)}


def renderings(template: Template) -> list[str]:
    """Every module `template` renders to: one per combination of its placeholders' choices."""
    names = sorted(template.params)
    combos = itertools.product(*(template.params[n] for n in names))
    return [template.filled(dict(zip(names, c, strict=True))) for c in combos]


def bug_bound(template: Template, part: Part) -> tuple[int, int]:
    """(near-duplicate groups, distinct buggy modules) `template` can give `part`: an upper
    bound, before the checks that drop a bug (two failing calls, no hard-coded fix), so a
    suite or stream of `part` holds fewer distinct bugs than the sum over its templates."""
    groups: set[tuple[str, str]] = set()
    bugs: set[str] = set()
    for source in renderings(template):
        for m, mutated in mutants(source):
            where = site(source, m)
            if group_part(template.id, where, m.operator) == part:
                groups.add((where, m.operator))
                bugs.add(mutated)
    return len(groups), len(bugs)
