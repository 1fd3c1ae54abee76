"""`shadowrl config`: the whole config tree a command would run with, as commented YAML.

    shadowrl config                                  # every field at its default
    shadowrl config --config configs/gpu.yaml --train.steps=2   # what that run reads

Every field is written, each under its description, so the output is a complete config
file: `configs/default.yaml` is `shadowrl config > configs/default.yaml`, kept in sync
by a test.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

import yaml
from pydantic import BaseModel

from shadowrl.commands.config import Config

HEADER = """\
# Every field of shadowrl's config tree at its default: the output of
# `shadowrl config > configs/default.yaml` (tests/commands/test_config.py keeps it in
# sync). Passing this file changes nothing; copy it, or a part of it, to start your
# own. Each section is defined next to the code it configures (`commands/config.py`).
"""
WIDTH = 92


def add_args(p: argparse.ArgumentParser) -> None:
    del p  # only --config and the overrides


def run(args: argparse.Namespace, config: Config) -> int:
    print(render(config), end="")
    return 0


def render(config: Config) -> str:
    """`config` as YAML that loads back to it, each field under its description."""
    return HEADER + "\n".join(_section(config, 0)) + "\n"


def _section(model: BaseModel, depth: int) -> list[str]:
    pad, lines = "  " * depth, []
    values = model.model_dump(mode="json")
    for name, field in type(model).model_fields.items():
        if field.description:
            text = " ".join(field.description.split())
            lines += [f"{pad}# {line}" for line in textwrap.wrap(text, WIDTH - len(pad) - 2)]
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            lines.append(f"{pad}{name}:")
            lines += _section(value, depth + 1)
        else:
            lines += [pad + line for line in _leaf(name, values[name])]
    return lines


def _leaf(name: str, value: Any) -> list[str]:
    text = yaml.safe_dump(
        {name: value}, default_flow_style=False, sort_keys=False, width=WIDTH, allow_unicode=True
    )
    return text.rstrip("\n").splitlines()
