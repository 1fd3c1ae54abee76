"""Adapter-only weight sync (`rl/lora_sync.py`): a LoRA version travels as its adapters
through a real weight store and the engine merges them onto the base it holds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import torch

from shadowrl.episode import EpisodeSpec
from shadowrl.inference.config import EngineConfig, SpeculativeConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.mtp import for_model
from shadowrl.models import tiny_model
from shadowrl.rl.cluster.actors import EngineActor, TrainerActor
from shadowrl.rl.companion import build_companion
from shadowrl.rl.config import LoRAConfig
from shadowrl.rl.forward import token_logprobs
from shadowrl.rl.lora import is_adapter
from shadowrl.rl.lora_sync import AdapterSync
from shadowrl.rl.orchestrator import Orchestrator, OrchestratorConfig, TaskSampler
from shadowrl.rl.run import local_services
from shadowrl.rl.trainer import Trainer
from shadowrl.rl.weights import WeightStore
from shadowrl.types import SamplingParams

from .test_lora import IDS, LORA, lora_trainer
from .test_mtp_rl import K, batch_of
from .test_mtp_rl import cfg as mtp_cfg
from .test_trainer import cfg, groups, tiny

TARGETS = {f"model.layers.{i}.self_attn.{m}.weight" for i in (0, 1) for m in ("q_proj", "v_proj")}
TOL = 1e-5  # fp32 logprobs, engine (merged) vs trainer (adapters live), see test (a)


def engine_for(model) -> Engine:
    return Engine(model, None, EngineConfig(max_batch=2, initial_kv_len=32))


def sync(trainer: Trainer, publisher, reader: AdapterSync, engine: Engine) -> dict:
    """One step's sync, as `Orchestrator._sync_weights` does it."""
    info = publisher.publish(trainer.state_dict(), trainer.version)
    engine.update_weights(reader.fetch(trainer.version), trainer.version)
    return info


def gap(trainer: Trainer, engine: Engine) -> float:
    """Max |logprob| difference on IDS between the trainer (adapters live) and the engine."""
    with torch.no_grad():
        ours = token_logprobs(trainer.model.eval(), IDS)
        theirs = token_logprobs(engine.model, IDS)
    return float((ours - theirs).abs().max())


def test_an_adapter_sync_makes_the_engine_score_as_the_trainer(tmp_path: Path):
    """(a) Measured: max |Δ logprob| over IDS 4.8e-7, 9.5e-7, 1.4e-6 after 1, 2, 3 steps
    (fp32; the trainer adds x Aᵀ Bᵀ beside x Wᵀ, the engine runs the merged W); the
    engine's own sampled tokens, scored by the trainer, within 4.8e-7."""
    trainer = lora_trainer()
    publisher = trainer.publisher(WeightStore(str(tmp_path / "w")))
    assert isinstance(publisher, AdapterSync)
    reader = AdapterSync(WeightStore(str(tmp_path / "w")))  # the engine's side, own cache
    engine = engine_for(trainer.policy_copy())  # as run.py starts it
    assert set(sync(trainer, publisher, reader, engine)) >= {"stored_bytes"}  # v0: the base
    trainer.train_groups(groups())
    publisher.publish(trainer.state_dict(), trainer.version)
    state = reader.fetch(trainer.version)
    assert set(state) == TARGETS  # once the base is held: only the merged targets travel
    engine.update_weights(state, trainer.version)
    assert engine.version == 1
    assert gap(trainer, engine) < TOL
    with torch.no_grad():
        before = token_logprobs(tiny().eval(), IDS)
        assert float((token_logprobs(engine.model, IDS) - before).abs().max()) > 1e-3
    prompt = [1, 2, 3, 5]
    gen = engine.generate_batch([prompt], SamplingParams(max_new_tokens=6, seed=0))[0]
    ids = torch.tensor([prompt + list(gen.token_ids)])
    with torch.no_grad():
        scored = token_logprobs(trainer.model.eval(), ids)[0, len(prompt) :]
    assert float((scored - torch.tensor(gen.logprobs)).abs().max()) < TOL


def test_successive_syncs_merge_onto_the_base_never_onto_an_older_merge(tmp_path: Path):
    """(b) Each sync's target weights are base + (α/r)·B A of that version, bit for bit
    equal to the trainer's own merge; adding each adapter onto the engine's previous
    (merged) weights instead would drift by the sum of the older adapters."""
    trainer = lora_trainer()
    publisher = trainer.publisher(WeightStore(str(tmp_path / "w")))
    reader = AdapterSync(WeightStore(str(tmp_path / "w")))
    engine = engine_for(tiny(seed=7))  # every weight must come through the store
    sync(trainer, publisher, reader, engine)
    base = {k: v.detach().clone() for k, v in engine.model.state_dict().items()}
    for step in range(1, 4):
        before = {k: engine.model.state_dict()[k].clone() for k in TARGETS}
        trainer.train_groups(groups())
        sync(trainer, publisher, reader, engine)
        merged = trainer.lora.merge(trainer.state_dict())
        now = engine.model.state_dict()
        assert engine.version == step and gap(trainer, engine) < TOL
        assert all(torch.equal(now[k], merged[k]) for k in TARGETS)
        assert all(torch.equal(now[k], v) for k, v in base.items() if k not in TARGETS)
        if step > 1:  # the naive accumulation differs from what the engine holds
            naive = {k: before[k] + (merged[k] - base[k]) for k in TARGETS}
            assert max(float((naive[k] - now[k]).abs().max()) for k in TARGETS) > 1e-4


def test_adapter_versions_publish_fewer_bytes_than_full_deltas(tmp_path: Path):
    """(c) Per step on this tiny model (vocab 128, hidden 64, rank 4, q_proj/v_proj of 2
    layers), measured over 3 steps: adapter-only 5.0-5.8 kB stored (zstd) of 7,168 raw
    bytes, vs the merged weights' delta 36.3-36.4 kB stored of 361,728 raw. The base
    itself is published once, as the full path's first snapshot is."""
    trainer = lora_trainer()
    adapters = trainer.publisher(WeightStore(str(tmp_path / "a")))
    full = WeightStore(str(tmp_path / "f"))  # today's path: merged weights, delta-coded
    first = adapters.publish(trainer.state_dict(), 0)
    assert first["kind"] == "full"
    full.publish(trainer.lora.merge(trainer.state_dict()), 0)
    sizes = []
    for _ in range(3):
        trainer.train_groups(groups())
        a = adapters.publish(trainer.state_dict(), trainer.version)
        f = full.publish(trainer.lora.merge(trainer.state_dict()), trainer.version)
        sizes.append((a["stored_bytes"], f["stored_bytes"], a["full_bytes"], f["full_bytes"]))
    print("adapter vs full, stored and raw bytes per step:", sizes)
    assert all(a < f and ra < rf for a, f, ra, rf in sizes)
    # fp32 A and B: rank 4 × (in + out), q_proj 64 -> 64 and v_proj 64 -> 32, 2 layers
    assert all(ra == 4 * 4 * ((64 + 64) + (64 + 32)) * 2 for _, _, ra, _ in sizes)


def test_a_resumed_trainer_and_a_fresh_engine_get_base_and_current_adapters(tmp_path: Path):
    """(d) A resumed trainer publishes its own base (merged − (α/r)·B A, float32-rounded)
    at its version; an engine that followed the old base switches to it, even though that
    version is the one it last fetched, now rewritten; a new engine joining mid-run reads
    base + current adapters."""
    url = str(tmp_path / "w")
    trainer = lora_trainer()
    publisher = trainer.publisher(WeightStore(url))
    reader = AdapterSync(WeightStore(url))
    engine = engine_for(trainer.policy_copy())
    sync(trainer, publisher, reader, engine)
    trainer.train_groups(groups())
    sync(trainer, publisher, reader, engine)  # the reader's store cache now holds v1
    ckpt = trainer.save(tmp_path / "ckpt")
    trainer.train_groups(groups())  # v2 is trained, then the run dies before publishing it
    assert WeightStore(url).meta(1)["lora"]["base_version"] == 0
    again = Trainer.resume(ckpt, cfg(**LORA, lr=1e-2))  # the rerun, at v1
    publisher = again.publisher(WeightStore(url))
    sync(again, publisher, reader, engine)  # v1 rewritten as the new base
    assert WeightStore(url).meta(1)["lora"] == {"scale": 2.0, "base_version": 1}
    assert gap(again, engine) < TOL
    for _ in range(2):
        again.train_groups(groups())
        sync(again, publisher, reader, engine)
        assert gap(again, engine) < TOL
    late = engine_for(tiny(seed=7))  # joins mid-run: all of its weights are wrong
    fresh = AdapterSync(WeightStore(url))
    latest = fresh.latest_version()
    assert latest == again.version == 3
    late.update_weights(fresh.fetch(latest), latest)
    assert gap(again, late) < TOL
    merged = again.lora.merge(again.state_dict())
    assert all(torch.equal(late.model.state_dict()[k], v) for k, v in merged.items())


def test_a_version_published_without_lora_passes_through(tmp_path: Path):
    """Readers (Ray engine actors, `shadowrl replay`) open any run's store through it."""
    model = tiny()
    store = WeightStore(str(tmp_path / "w"))
    store.publish(model.state_dict(), 0)
    got = AdapterSync(WeightStore(str(tmp_path / "w"))).fetch(0)
    assert got.keys() == model.state_dict().keys()
    assert all(torch.equal(got[k], v) for k, v in model.state_dict().items())


def test_the_orchestrators_sync_sends_adapters_and_a_companions_heads(tmp_path: Path):
    """The in-process path end to end: `local_services` publishes the base at start, each
    `Orchestrator._sync_weights` sends adapters + the MTP heads, and the engine's swap
    (in flight, engine thread running) leaves its policy equal to the trainer's merge."""
    model, tok = tiny_model(seed=0)
    train = mtp_cfg(every=1).model_copy(update={"lora": LoRAConfig(**LORA["lora"])})
    engine_cfg = EngineConfig(speculative=SpeculativeConfig(k=K, auto=False))
    heads = build_companion(train, heads=for_model(model, K, vocab=512))
    services = local_services(
        model, tok, None, tmp_path, train=train, engine_config=engine_cfg,
        spec=EpisodeSpec(), seed=0, companion=heads,
    )  # fmt: skip
    with services as s:
        trainer, engine = s.trainer, s.engine
        assert isinstance(s.store, AdapterSync)
        orch = Orchestrator(
            cfg=OrchestratorConfig(), train=train, rollout=s.rollout, engine=engine,
            trainer=trainer, store=s.store, tasks=TaskSampler([("t", None)], seed=0),
            on_step=lambda *_: None, on_error=lambda _: None,
        )  # fmt: skip
        for step in range(2):  # the engine runs (`local_services` started it): in flight
            trainer.step(batch_of(49152, seed=step))
            info = orch._sync_weights()
            moving = {k: v for k, v in trainer.state_dict().items() if is_adapter(k)}
            moving |= trainer.companion.state_dict()
            assert info["full_bytes"] == sum(v.numel() * v.element_size() for v in moving.values())
            assert engine.version == trainer.version == step + 1
            policy = engine.model.state_dict()
            merged = trainer.lora.merge(trainer.model.state_dict())
            assert all(torch.equal(policy[k], v) for k, v in merged.items())
            served = engine.speculator.heads.state_dict()
            trained = trainer.companion.served().state_dict()
            assert all(torch.equal(served[k], trained[k]) for k in trained)


def test_the_ray_actors_sync_adapters_through_the_same_path(tmp_path: Path):
    """The Ray backend's actors as plain objects (no Ray): the trainer actor publishes
    through `Trainer.publisher`, the engine actor reads through `AdapterSync`, a new
    engine actor catches up to base + current adapters, and `weights()` is the merge."""
    url, train = str(tmp_path / "w"), cfg(**LORA, lr=1e-2)
    trainer = TrainerActor(tiny(), None, None, train, url, None)
    assert trainer.publish(0)["kind"] == "full"  # the base
    trainer.train_groups(groups())
    assert trainer.publish(1)["full_bytes"] == 7168  # the adapters alone (see test (c))
    config = EngineConfig(max_batch=2, initial_kv_len=32)
    engine = EngineActor(tiny(seed=7), None, config, train, url, seed=0)  # joins at v1
    try:
        assert engine.version() == 1 and gap(trainer.trainer, engine.engine) < TOL
        trainer.train_groups(groups())
        trainer.publish(2)
        asyncio.run(engine.load(2))
        assert engine.version() == 2 and gap(trainer.trainer, engine.engine) < TOL
        merged, held = trainer.weights(), engine.engine.model.state_dict()
        assert merged.keys() == held.keys()
        assert all(torch.equal(held[k], v) for k, v in merged.items())
    finally:
        engine.engine.stop()
