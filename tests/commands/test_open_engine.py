"""A restarted server stamps its tokens with the registry's version of the weights it
loads (`serve.policy_version`), not 0: the real-time loop drops sessions older than its
staleness bound by these versions."""

from __future__ import annotations

import asyncio
from pathlib import Path

from shadowrl.commands.config import load_config
from shadowrl.commands.policies import open_engine
from shadowrl.types import SamplingParams

TINY = str(Path(__file__).parents[2] / "configs" / "tiny.yaml")


def test_an_opened_engine_stamps_the_version_it_was_given() -> None:
    config = load_config([TINY], [])
    sampling = SamplingParams(max_new_tokens=3)
    with open_engine("tiny", config, version=2) as (engine, _):
        gen = asyncio.run(engine.generate([1, 2, 3], sampling))
    assert gen.versions and set(gen.versions) == {2}
    with open_engine("tiny", config) as (engine, _):
        assert set(asyncio.run(engine.generate([1, 2, 3], sampling)).versions) == {0}
