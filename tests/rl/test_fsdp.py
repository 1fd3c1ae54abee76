"""FSDP2 and HSDP training on real gloo ranks (spawned processes) against one plain rank."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from torch.distributed.tensor import DTensor

from shadowrl.commands.main import main
from shadowrl.models import load_checkpoint, tiny_config
from shadowrl.rl.trainer import Trainer
from shadowrl.rl.weights import WeightStore

from .test_trainer import VOCAB, cfg, groups, tiny

# Sharded and unsharded steps sum the same microbatch gradients in another order and
# the clip coefficient comes from a norm reduced in another order, so weights differ by
# float32 rounding: after two AdamW steps at lr 1e-3 the worst element differed by 3.0e-8
# and 7.1e-8 (2 ranks, tiny Llama); without clipping, bit-identical. The loss and grad
# norm agree to 1e-5 relative.
ATOL = 2e-7
SETTINGS = {"microbatch_tokens": 16, "lr": 1e-3}  # 3 microbatches: rank 1 runs one + one idle


def worst(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def publish_spied(publisher, state, version: int, monkeypatch) -> tuple[dict, list]:
    """Publish, recording every DTensor gather rank 0 makes (the spy calls the real one)."""
    gathers: list = []
    with monkeypatch.context() as m:
        for name in ("full_tensor", "redistribute"):
            real = getattr(DTensor, name)
            spy = lambda self, *a, real=real, name=name, **kw: (  # noqa: E731
                gathers.append((name, tuple(self.shape))) or real(self, *a, **kw)
            )
            m.setattr(DTensor, name, spy)
        info = publisher.publish(state, version)
    return info, gathers


def test_fsdp_two_ranks_step_publish_and_reload_as_one(tmp_path: Path, monkeypatch):
    model = tiny()
    one = Trainer(copy.deepcopy(model), cfg(**SETTINGS))
    two = Trainer(copy.deepcopy(model), cfg(**SETTINGS, world_size=2, parallel="fsdp"))
    try:
        assert isinstance(two.model.lm_head.weight, DTensor)  # really sharded
        publisher = two.publisher(WeightStore(str(tmp_path / "w"), shard_bytes=4096))
        for step in range(2):
            m1, m2 = one.train_groups(groups()), two.train_groups(groups())
            assert m1["microbatches"] == 3 and m2["version"] == m1["version"] == step + 1
            assert m2["loss"] == pytest.approx(m1["loss"], rel=1e-5)
            assert m2["grad_norm"] == pytest.approx(m1["grad_norm"], rel=1e-5)
            info, gathers = publish_spied(publisher, two.state_dict(), two.version, monkeypatch)
            assert info["parts"] == 2 and info["kind"] == ("full", "delta")[step]
            assert gathers == []  # rank 0 encoded its own rows, gathered nothing
            check_rows_published_by_their_ranks(tmp_path / "w", two)
            published = WeightStore(str(tmp_path / "w")).fetch(two.version)  # replays v1
            assert worst(one.state_dict(), published) <= ATOL, f"step {step + 1}"
            for k, t in two.state_dict().items():  # rank 0's rows, exactly
                local = t.to_local()
                assert torch.equal(published[k][: local.shape[0]], local), k
            ckpt = two.save(tmp_path / "ckpt")
            # exported in this one process, no ranks: the fp32 shards DCP gathered
            hf = tmp_path / f"hf{step + 1}"
            assert main(["export", "--checkpoint", str(ckpt), "--out", str(hf)]) == 0
            gathered = dict(load_checkpoint(hf).state_dict())
            assert worst(published, gathered) == 0.0
            # the same weights published whole (as replicas write them) read back the same
            whole = WeightStore(str(tmp_path / f"whole{step + 1}"))
            whole.publish(gathered, two.version)
            assert all(torch.equal(v, published[k]) for k, v in whole.fetch(two.version).items())
            if step == 0:
                ckpt1, after_one = ckpt, published
        assert (ckpt1 / "dcp").is_dir() and not (ckpt1 / "model.safetensors").exists()
        two.load_state(ckpt1)  # every rank reads its shards and moments back
        assert two.version == 1
        publisher.publish(two.state_dict(), 3)
        assert worst(after_one, WeightStore(str(tmp_path / "w")).fetch(3)) == 0.0
        engine_copy = two.policy_copy(lambda: WeightStore(str(tmp_path / "w")).fetch(3))
        assert not any(isinstance(p, DTensor) for p in engine_copy.parameters())
        assert worst(after_one, dict(engine_copy.state_dict())) == 0.0
    finally:
        two.close()


def check_rows_published_by_their_ranks(store: Path, two: Trainer) -> None:
    """Every tensor is rows from both ranks (torch.chunk's split of dim 0), and each rank
    wrote ~half the bytes: no rank encoded a whole tensor."""
    m = json.loads(max(store.glob("v*/manifest.json")).read_text())
    for k, t in two.state_dict().items():
        half = -(-t.shape[0] // 2)
        assert m["slices"][k] == [[0, 0, half], [1, half, t.shape[0]]], k
    by_rank = [sum(s["raw_bytes"] for s in m["shards"] if s["part"] == r) for r in (0, 1)]
    assert abs(by_rank[0] - by_rank[1]) <= 0.01 * sum(by_rank), by_rank


def test_fsdp_on_one_rank_is_a_group_of_one_and_steps_as_a_replica(tmp_path: Path):
    # FSDP on one rank (what one GPU runs: its mixed precision and sharded checkpoints)
    # makes a process group of one in this process and spawns nothing.
    import torch.distributed as dist

    model = tiny()
    plain = Trainer(copy.deepcopy(model), cfg(**SETTINGS))
    alone = Trainer(copy.deepcopy(model), cfg(**SETTINGS, parallel="fsdp"))
    try:
        assert dist.is_initialized() and dist.get_world_size() == 1
        assert isinstance(alone.model.lm_head.weight, DTensor)
        assert alone.ranks is not None and alone.ranks.spawn.procs == []
        for _ in range(2):
            m1, m2 = plain.train_groups(groups()), alone.train_groups(groups())
            assert m2["loss"] == pytest.approx(m1["loss"], rel=1e-5)
        alone.publisher(WeightStore(str(tmp_path / "w"))).publish(alone.state_dict(), 2)
        assert worst(plain.state_dict(), WeightStore(str(tmp_path / "w")).fetch(2)) <= ATOL
        assert (alone.save(tmp_path / "ckpt") / "dcp").is_dir()
    finally:
        alone.close()
    assert not dist.is_initialized()


@pytest.mark.slow  # two spawned groups, ~1 min on 2 loaded cores
def test_resume_from_a_sharded_checkpoint_takes_the_same_step(tmp_path: Path):
    from transformers import LlamaForCausalLM

    torch.manual_seed(1)
    tied = LlamaForCausalLM(tiny_config(vocab_size=VOCAB, tie_word_embeddings=True))
    c = cfg(**SETTINGS, world_size=2, parallel="fsdp")
    first = Trainer(tied, c)
    store = WeightStore(str(tmp_path / "w"))
    try:
        first.train_groups(groups())
        ckpt = first.save(tmp_path / "ckpt")
        first.train_groups(groups())
        first.publisher(store).publish(first.state_dict(), 2)
    finally:
        first.close()
    again = Trainer.resume(ckpt, c)
    try:
        assert again.version == 1
        again.train_groups(groups())
        # a fresh store: rank 1's store object does not know the versions written before
        again.publisher(WeightStore(str(tmp_path / "w2"))).publish(again.state_dict(), 2)
    finally:
        again.close()
    a, b = store.fetch(2), WeightStore(str(tmp_path / "w2")).fetch(2)
    assert "lm_head.weight" not in a  # tied: published once
    assert worst(a, b) == 0.0


@pytest.mark.slow  # four spawned ranks
def test_hsdp_on_a_2x2_mesh_steps_as_one_rank(tmp_path: Path):
    model = tiny()
    settings = {**SETTINGS, "microbatch_tokens": 8}  # more microbatches than ranks
    one = Trainer(copy.deepcopy(model), cfg(**settings))
    four = Trainer(
        copy.deepcopy(model), cfg(**settings, world_size=4, parallel="hsdp", shard_size=2)
    )
    try:
        mesh = four.model.lm_head.weight.device_mesh
        assert mesh.shape == (2, 2)
        m1, m4 = one.train_groups(groups()), four.train_groups(groups())
        assert m4["loss"] == pytest.approx(m1["loss"], rel=1e-5)
        assert m4["grad_norm"] == pytest.approx(m1["grad_norm"], rel=1e-5)
        store = WeightStore(str(tmp_path))
        assert four.publisher(store).publish(four.state_dict(), 1)["parts"] == 4
        assert worst(one.state_dict(), store.fetch(1)) <= ATOL
        # each shard's rows are split between its two replicas: every rank writes some
        m = json.loads((tmp_path / "v00000001" / "manifest.json").read_text())
        assert all(
            sorted(p for p, a, b in s if b > a) == [0, 1, 2, 3] for s in m["slices"].values()
        )
    finally:
        four.close()


def test_fsdp_mixed_precision_step_tracks_the_autocast_step(tmp_path: Path):
    # train.autocast: bfloat16 under FSDP is FSDP2's MixedPrecisionPolicy (bf16 gathers
    # and compute, fp32 gradient reduction) on top of autocast. Both round the weights to
    # bf16 for every matmul; the policy also keeps the residual stream, norms and
    # embeddings in bf16 (8-bit mantissa, unit roundoff 2^-9 ~ 2e-3) where autocast keeps
    # them in fp32, so the two differ by bf16 rounding, compounded over the layers: the
    # loss and grad norm within 2e-2 relative and the update within 5e-2 relative (L2);
    # measured 1.9e-3, 1.3e-3 and 1.3e-2 (the same size as autocast vs plain fp32, 1.3e-2,
    # so the dtype seen inside the forward is what shows the policy is on). eps=1 makes
    # AdamW's first step ~lr·g (|g| << 1), so the update is the gradient, not its sign.
    model = tiny()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    kw = {**SETTINGS, "grad_clip": 0.0, "eps": 1.0, "autocast": "bfloat16"}
    one = Trainer(copy.deepcopy(model), cfg(**kw))
    two = Trainer(copy.deepcopy(model), cfg(**kw, world_size=2, parallel="fsdp"))
    try:
        seen: list[torch.dtype] = []  # the unsharded weight's dtype inside the forward
        layer = two.model.model.layers[0]
        layer.register_forward_pre_hook(lambda m, a: seen.append(m.mlp.up_proj.weight.dtype))
        m1, m2 = one.train_groups(groups()), two.train_groups(groups())
        assert seen and set(seen) == {torch.bfloat16}
        assert m2["loss"] == pytest.approx(m1["loss"], rel=2e-2)
        assert m2["grad_norm"] == pytest.approx(m1["grad_norm"], rel=2e-2)
        two.publisher(WeightStore(str(tmp_path))).publish(two.state_dict(), 1)
        published = WeightStore(str(tmp_path)).fetch(1)
        assert {t.dtype for t in published.values()} == {torch.float32}  # fp32 masters
        update = lambda s: torch.cat([(s[k] - start[k]).flatten() for k in published])  # noqa: E731
        u1, u2 = update(one.state_dict()), update(published)
        assert float((u2 - u1).norm() / u1.norm()) <= 5e-2
    finally:
        two.close()


def test_export_writes_a_tied_model_and_refuses_a_plain_directory(tmp_path: Path):
    # One process, no ranks: a torch distributed checkpoint written here stands in for the
    # ranks' shards (DCP reassembles either the same way; the 2-rank test exports real ones).
    import torch.distributed.checkpoint as dcp
    from transformers import LlamaForCausalLM

    torch.manual_seed(2)
    model = LlamaForCausalLM(tiny_config(vocab_size=VOCAB, tie_word_embeddings=True))
    ckpt = tmp_path / "step_00000001"
    ckpt.mkdir()
    model.config.save_pretrained(ckpt)
    (ckpt / "trainer_state.json").write_text("{}")  # training-only: not exported
    dcp.save({"model": model.state_dict()}, checkpoint_id=str(ckpt / "dcp"))
    assert main(["export", "--checkpoint", str(ckpt), "--out", str(tmp_path / "hf")]) == 0
    assert not (tmp_path / "hf" / "trainer_state.json").exists()
    back = load_checkpoint(tmp_path / "hf")
    assert back.lm_head.weight is back.model.embed_tokens.weight  # still tied
    assert worst(dict(model.state_dict()), dict(back.state_dict())) == 0.0
    assert main(["export", "--checkpoint", str(tmp_path / "hf"), "--out", str(tmp_path / "x")]) == 2
