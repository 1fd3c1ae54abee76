"""`train.loss.kl_coef` in `shadowrl train`: the in-process services give the trainer a
frozen copy of the policy RL starts from, and a resumed run keeps that start as its
reference, not the checkpoint it resumes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from shadowrl.episode import EpisodeSpec
from shadowrl.inference.config import EngineConfig
from shadowrl.models import tiny_model
from shadowrl.rl.run import _checkpoint_model, local_services

from .test_mtp_rl import batch_of
from .test_trainer import cfg, params


def services(model, tok, ckpt, run_dir: Path, kl: float):
    return local_services(
        model, tok, ckpt, run_dir, train=cfg(kl_coef=kl), engine_config=EngineConfig(),
        spec=EpisodeSpec(), seed=0,
    )  # fmt: skip


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_reference_is_the_start_frozen_also_after_a_resume(tmp_path: Path) -> None:
    model, tok = tiny_model(seed=0)
    start = params(model)
    with services(model, tok, None, tmp_path, kl=0.1) as s:
        trainer = s.trainer
        ref = trainer.ref_model
        assert ref is not None and ref is not trainer.model
        assert not any(p.requires_grad for p in ref.parameters())
        first = trainer.step(batch_of(512, seed=0))
        second = trainer.step(batch_of(512, seed=1))
        assert first["kl"] == pytest.approx(0.0, abs=1e-6)  # the policy is still the start
        assert second["kl"] > 0  # one update away from it
        assert not same(params(trainer.model), start) and same(params(ref), start)
        ckpt = trainer.save(tmp_path / "ckpt")
    again, _ = tiny_model(seed=0)  # a resumed process loads the start again
    with services(again, tok, ckpt, tmp_path, kl=0.1) as s:
        assert same(params(s.trainer.ref_model), start)
        assert not same(params(s.trainer.model), start)  # resumed: the trained weights
    with services(model, tok, None, tmp_path / "off", kl=0.0) as s:
        assert s.trainer.ref_model is None


def test_kl_on_several_ranks_is_refused_at_load() -> None:
    with pytest.raises(ValidationError, match="kl_coef > 0 needs world_size 1"):
        cfg(kl_coef=0.1, world_size=2)


def test_a_finished_kl_run_reads_back_its_last_checkpoint(tmp_path: Path) -> None:
    """`shadowrl train` on a run whose steps are done (a re-run for its evals and report)
    returns the checkpoint's policy; with a KL term it used to fail for want of a reference."""
    model, tok = tiny_model(seed=0)
    with services(model, tok, None, tmp_path, kl=0.1) as s:
        s.trainer.step(batch_of(512, seed=0))
        s.trainer.step(batch_of(512, seed=1))
        trained = params(s.trainer.model)
        ckpt = s.trainer.save(tmp_path / "ckpt")
    again, _ = tiny_model(seed=0)
    policy = _checkpoint_model(ckpt, again, cfg(kl_coef=0.1))
    assert same(params(policy), trained) and not same(trained, params(again))
