"""Every template of the family, and which part of the splits each one serves."""

from __future__ import annotations

from shadowrl.tasks.family import templates_text
from shadowrl.tasks.family.splits import Part, template_part
from shadowrl.tasks.family.template import Template

TEMPLATES: tuple[Template, ...] = (*templates_text.TEMPLATES,)


def by_id() -> dict[str, Template]:
    found: dict[str, Template] = {}
    for t in TEMPLATES:
        if t.id in found:
            raise ValueError(f"two templates with the id {t.id!r}")
        found[t.id] = t
    return found


def templates(part: Part) -> tuple[Template, ...]:
    """The templates `part` draws from: held-out seeds come from the train templates."""
    home = "train" if part == "heldout-seeds" else part
    return tuple(t for t in TEMPLATES if template_part(t.id) == home)
