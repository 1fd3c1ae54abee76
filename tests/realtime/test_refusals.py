"""Configs the real-time loop cannot run are refused before anything is written."""

from __future__ import annotations

import argparse

import pytest

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError
from shadowrl.commands.realtime import run as realtime_command


@pytest.mark.parametrize("parallel", ["fsdp", "hsdp"])
def test_realtime_refuses_a_sharded_trainer(tmp_path, parallel: str) -> None:
    # a cycle's rank-0-only forwards (divergence, heads' acceptance) would hang the others
    train = {"parallel": parallel, "world_size": 2, "shard_size": 2}
    config = Config.model_validate({"run_dir": str(tmp_path / "run"), "train": train})
    with pytest.raises(UsageError, match=r"train\.parallel: replicate"):
        realtime_command(argparse.Namespace(backend=None, cycles=1), config)
    assert not (tmp_path / "run").exists()


def test_realtime_takes_replicas_on_several_ranks(tmp_path) -> None:
    # the refusal is about sharding, not the rank count: the check after it is reached
    config = Config.model_validate(
        {"run_dir": str(tmp_path / "run"), "train": {"world_size": 2}, "serve": {"traces": None}}
    )
    with pytest.raises(UsageError, match="needs the trace store"):
        realtime_command(argparse.Namespace(backend=None, cycles=1), config)
