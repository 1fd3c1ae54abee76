"""The trainer on a tiny random Llama: it learns, accumulates exactly, and resumes."""

import copy
import os
from pathlib import Path

import pytest
import torch

from shadowrl.models import tiny_config
from shadowrl.rl.batch import build_rl_batch
from shadowrl.rl.checkpoint import latest_checkpoint
from shadowrl.rl.config import MOVED, TrainConfig
from shadowrl.rl.forward import token_logprobs
from shadowrl.rl.loss import sft_loss
from shadowrl.rl.sft import run_sft
from shadowrl.rl.trainer import Trainer
from shadowrl.types import Segment, Trajectory

VOCAB = 128


def tiny(seed: int = 0):
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(tiny_config(vocab_size=VOCAB, tie_word_embeddings=False))


def traj(reward: float, prompt: list[int], gen: list[int], version: int = 0) -> Trajectory:
    seg = Segment(
        token_ids=tuple(prompt + gen),
        loss_mask=(False,) * len(prompt) + (True,) * len(gen),
        logprobs=(0.0,) * len(prompt) + (-4.0,) * len(gen),
        versions=(-1,) * len(prompt) + (version,) * len(gen),
    )
    return Trajectory("t", (), (), (seg,), "submitted", reward=reward)


def groups() -> list[list[Trajectory]]:
    good, bad = [5, 6, 7, 8], [9, 9, 9]
    return [
        [traj(1.0, [1, 2, 3], good), traj(0.0, [1, 2, 3], bad)],
        [traj(1.0, [1, 4], good + good), traj(0.0, [1, 4], bad), traj(0.0, [1, 4], [10, 11])],
    ]


def cfg(**kw) -> TrainConfig:
    """A config from flat names (`lr`, `grad_clip`, ...) placed into their sections."""
    tree: dict = {"optimizer": {"lr": 1e-2, "grad_clip": 1.0}, "batch": {"microbatch_tokens": 4096}}
    for name, value in kw.items():
        section, _, key = MOVED.get(name, name).rpartition(".")
        (tree.setdefault(section, {}) if section else tree)[key] = value
    return TrainConfig.model_validate(tree)


def params(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_rl_step_raises_rewarded_tokens_and_bumps_version():
    trainer = Trainer(tiny(), cfg())
    ids = torch.tensor([[1, 2, 3, 5, 6, 7, 8]])
    before = token_logprobs(trainer.model, ids)[0, 3:].sum().item()
    for _ in range(3):
        metrics = trainer.train_groups(groups())
    after = token_logprobs(trainer.model, ids)[0, 3:].sum().item()
    assert after > before
    assert trainer.version == 3 and metrics["version"] == 3 and metrics["skipped"] == 0
    assert metrics["grad_norm"] > 0 and metrics["tokens"] > 0


def test_positive_advantage_reaches_the_batch_from_the_config():
    # `loss.advantage: positive`: the three attempts below their group's mean are skipped
    # (no gradient); the centred default trains all five.
    positive = Trainer(tiny(), cfg(**{"loss.advantage": "positive"}))
    assert positive.train_groups(groups())["skipped_zero_adv_segments"] == 3
    assert Trainer(tiny(), cfg()).train_groups(groups())["skipped_zero_adv_segments"] == 0


def test_microbatch_accumulation_equals_one_big_batch():
    # Many tiny microbatches and one big one must give the same update: losses are
    # divided by the batch-wide token budget, never by a per-microbatch count. Adam's
    # first step is lr·g/(|g| + eps): with a tiny eps, summation-order noise in a
    # near-zero gradient (the big batch shares its prompt prefix) flips a whole update.
    c = cfg(grad_clip=0.0, eps=1e-4)
    big, small = Trainer(tiny(), c), Trainer(tiny(), c)
    kw = dict(trainer_version=0, max_staleness=1, pad_to_multiple=1)
    m_big = big.step(build_rl_batch(groups(), microbatch_tokens=4096, **kw))
    m_small = small.step(build_rl_batch(groups(), microbatch_tokens=8, **kw))
    assert m_small["microbatches"] > m_big["microbatches"] == 1
    assert m_small["loss"] == pytest.approx(m_big["loss"], rel=1e-5)
    assert m_small["grad_norm"] == pytest.approx(m_big["grad_norm"], rel=1e-4)
    for k, v in params(big.model).items():
        torch.testing.assert_close(params(small.model)[k], v, atol=1e-4, rtol=0)


def test_activation_checkpointing_gives_the_same_update():
    # Off, the rows' shared prompt prefix is encoded once; on, every row runs in full
    # through checkpointed layers. Both must produce the same loss, gradient and weights.
    kw = dict(trainer_version=0, max_staleness=1, microbatch_tokens=4096, pad_to_multiple=1)
    plain = Trainer(tiny(), cfg(grad_clip=0.0, eps=1e-4, activation_checkpointing=False))
    ckpt = Trainer(tiny(), cfg(grad_clip=0.0, eps=1e-4, activation_checkpointing=True))
    assert all(layer.gradient_checkpointing for layer in ckpt.model.model.layers)
    m_plain, m_ckpt = (
        plain.step(build_rl_batch(groups(), **kw)),
        ckpt.step(build_rl_batch(groups(), **kw)),
    )
    assert m_ckpt["loss"] == pytest.approx(m_plain["loss"], rel=1e-5)
    assert m_ckpt["grad_norm"] == pytest.approx(m_plain["grad_norm"], rel=1e-4)
    for k, v in params(plain.model).items():
        torch.testing.assert_close(params(ckpt.model)[k], v, atol=1e-4, rtol=0)


def test_empty_batch_is_skipped_without_a_version_bump():
    trainer = Trainer(tiny(), cfg())
    flat = [[traj(1.0, [1, 2], [3, 4]), traj(1.0, [1, 2], [5])]]
    metrics = trainer.train_groups(flat)
    assert metrics["skipped"] == 1 and trainer.version == 0
    assert metrics["zero_adv_groups"] == 1


def test_checkpoint_resume_is_exact(tmp_path: Path):
    c = cfg(keep_checkpoints=2)
    trainer = Trainer(tiny(), c)
    trainer.train_groups(groups())
    ckpt = trainer.save(tmp_path)
    saved_params = params(trainer.model)
    saved_opt = copy.deepcopy(trainer.optimizer.state_dict())
    trainer.train_groups(groups())  # the step in progress when we "crash"
    continued = params(trainer.model)
    # kill -9 while writing the next checkpoint leaves a partial temp dir behind.
    partial = tmp_path / ".tmp-step_00000002"
    partial.mkdir()
    (partial / "model.safetensors").write_bytes(os.urandom(64))
    assert latest_checkpoint(tmp_path) == ckpt

    resumed = Trainer.resume(ckpt, c)
    assert resumed.version == 1 and resumed.step_count == 1
    for k, v in saved_params.items():
        assert torch.equal(params(resumed.model)[k], v), k
    opt = resumed.optimizer.state_dict()
    for i, st in saved_opt["state"].items():
        for name, t in st.items():
            assert torch.equal(opt["state"][i][name], t), (i, name)
    resumed.train_groups(groups())  # redo the lost step: bit-identical result
    for k, v in continued.items():
        assert torch.equal(params(resumed.model)[k], v), k


def test_resume_keeps_the_moments_but_takes_the_new_configs_lr(tmp_path: Path):
    trainer = Trainer(tiny(), cfg(lr=1e-3))
    trainer.train_groups(groups())
    ckpt = trainer.save(tmp_path)
    resumed = Trainer.resume(ckpt, cfg(lr=2e-4, weight_decay=0.1))
    [group] = resumed.optimizer.param_groups
    assert group["lr"] == 2e-4 and group["weight_decay"] == 0.1
    moments = resumed.optimizer.state_dict()["state"]
    assert moments and all(float(st["step"]) == 1 for st in moments.values())
    assert resumed.train_groups(groups())["lr"] == 2e-4


def test_a_save_with_nothing_trained_since_leaves_the_checkpoint_untouched(tmp_path: Path):
    # Rewriting it would open a window where kill -9 finds the checkpoint that
    # loop_state.json names half-deleted (an RL step of zero-advantage groups saves again).
    trainer = Trainer(tiny(), cfg())
    trainer.train_groups(groups())
    first = trainer.save(tmp_path)
    (first / "marker").touch()
    assert trainer.save(tmp_path) == first and (first / "marker").exists()
    resumed = Trainer.resume(first, cfg())
    assert resumed.save(tmp_path) == first and (first / "marker").exists()
    resumed.train_groups(groups())
    assert resumed.save(tmp_path).name == "step_00000002"


def test_checkpoint_is_a_loadable_hf_directory_and_old_ones_are_pruned(tmp_path: Path):
    from transformers import AutoModelForCausalLM

    trainer = Trainer(tiny(), cfg(keep_checkpoints=2))
    for _ in range(3):
        trainer.train_groups(groups())
        trainer.save(tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["step_00000002", "step_00000003"]
    assert (tmp_path / names[-1] / "model.safetensors").exists()
    hf = AutoModelForCausalLM.from_pretrained(tmp_path / names[-1])
    for k, v in trainer.model.state_dict().items():
        assert torch.equal(hf.state_dict()[k], v), k


def test_sft_loss_only_counts_masked_tokens():
    lp = torch.tensor([[-1.0, -2.0, -3.0]], requires_grad=True)
    mask = torch.tensor([[False, True, True]])
    loss = sft_loss(lp, mask, token_budget=2)
    assert loss.item() == pytest.approx(2.5)
    loss.backward()
    assert lp.grad[0].tolist() == pytest.approx([0.0, -0.5, -0.5])


def test_sft_learns_the_demonstration():
    trainer = Trainer(tiny(), cfg(sft_lr=1e-2), objective="sft")
    demos = [traj(0.0, [1, 2, 3], [20, 21, 22, 23]), traj(0.0, [1, 4], [30, 31])]
    history = run_sft(trainer, demos, epochs=8, batch_tokens=64).history
    assert len(history) == 8 and trainer.version == 8
    assert history[-1]["nll"] < 0.5 * history[0]["nll"]


def test_state_dict_for_the_engine_drops_tied_aliases():
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    tied = LlamaForCausalLM(tiny_config(vocab_size=VOCAB, tie_word_embeddings=True))
    state = Trainer(tied, cfg()).state_dict()
    assert "model.embed_tokens.weight" in state and "lm_head.weight" not in state
    untied = Trainer(tiny(), cfg()).state_dict()
    assert "lm_head.weight" in untied


def full_logprobs(model, ids: torch.Tensor) -> torch.Tensor:
    """The plain computation: every position's full-vocabulary logits, then log-softmax."""
    logits = model(input_ids=ids, use_cache=False).logits.float()
    lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
    return torch.cat([torch.zeros(ids.shape[0], 1), lp], dim=1)


@pytest.mark.parametrize(("tied", "shared"), [(True, 0), (False, 0), (True, 6), (False, 6)])
def test_masked_logprobs_and_gradients_equal_the_full_vocabulary_computation(tied, shared):
    # Only masked positions are computed (decoder cut after the last one, a prefix all
    # rows share encoded once, LM head on the selected hidden states in chunks): values
    # and every parameter gradient must match the full [B, T, V] computation.
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(tiny_config(vocab_size=VOCAB, tie_word_embeddings=tied))
    ids = torch.randint(0, VOCAB, (3, 12))
    ids[:, :shared] = ids[0, :shared]  # masked tokens inside and after the shared prefix
    mask = torch.zeros(3, 12, dtype=torch.bool)
    mask[0, 4:9], mask[1, 2:4], mask[1, 10], mask[2, 0] = True, True, True, True
    coef = torch.randn(3, 12)  # arbitrary per-token loss weights
    got = token_logprobs(model, ids, mask, chunk=2)
    g_got = torch.autograd.grad((got * coef).sum(), list(model.parameters()))
    ref = full_logprobs(model, ids) * (mask & (torch.arange(12) > 0))
    g_ref = torch.autograd.grad((ref * coef).sum(), list(model.parameters()))
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)
    assert (got[~mask] == 0).all() and got[2, 0] == 0  # position 0 has no prefix
    for a, e in zip(g_got, g_ref, strict=True):
        torch.testing.assert_close(a, e, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(
        token_logprobs(model, ids), full_logprobs(model, ids), atol=1e-5, rtol=0
    )


def test_kl_step_with_reference_model_and_a_row_without_trainable_tokens():
    trainer = Trainer(tiny(), cfg(kl_coef=0.1), ref_model=tiny(seed=1))
    metrics = trainer.train_groups(groups())
    assert metrics["skipped"] == 0 and metrics["kl"] > 0
    empty = build_rl_batch(
        [[traj(1.0, [], [3]), traj(0.0, [], [4])]], trainer_version=1, max_staleness=1,
        microbatch_tokens=4096,
    )  # fmt: skip
    assert trainer.step(empty)["skipped"] == 1  # one-token rows: nothing to predict from


def test_under_autocast_the_reference_runs_in_the_same_precision_as_the_policy():
    # Policy and reference with the same weights: the KL term must read 0 at the first step.
    # A reference in fp32 beside a bf16-autocast policy reads bf16's rounding as KL instead.
    model = tiny()
    trainer = Trainer(model, cfg(kl_coef=0.1, autocast="bfloat16"), ref_model=copy.deepcopy(model))
    assert trainer.train_groups(groups())["kl"] == 0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("checkpointing", [False, True])
def test_a_cuda_step_gives_the_cpu_update(checkpointing: bool):
    c = cfg(grad_clip=0.0, eps=1e-4, activation_checkpointing=checkpointing)
    kw = dict(trainer_version=0, max_staleness=1, microbatch_tokens=4096, pad_to_multiple=1)
    cpu, gpu = Trainer(tiny(), c), Trainer(tiny().cuda(), c)
    m_cpu, m_gpu = (
        cpu.step(build_rl_batch(groups(), **kw)),
        gpu.step(build_rl_batch(groups(), **kw)),
    )
    assert gpu.device.type == "cuda" and m_gpu["tokens"] == m_cpu["tokens"] > 0
    assert m_gpu["loss"] == pytest.approx(m_cpu["loss"], rel=1e-4)
    assert m_gpu["grad_norm"] == pytest.approx(m_cpu["grad_norm"], rel=1e-3)
    for k, v in params(cpu.model).items():
        torch.testing.assert_close(params(gpu.model)[k].cpu(), v, atol=1e-4, rtol=0)


def test_bf16_autocast_step_keeps_fp32_weights_and_tracks_the_fp32_update():
    # Mixed precision: matmuls in bf16, weights/grads/AdamW in fp32. Same batch, same start:
    # the loss agrees within bf16's precision (~1e-2 relative) and the update has the same
    # direction, while the step itself really ran in bf16 (the losses are not bit-equal).
    kw = dict(trainer_version=0, max_staleness=1, microbatch_tokens=4096, pad_to_multiple=1)
    full = Trainer(tiny(), cfg(grad_clip=0.0))
    mixed = Trainer(tiny(), cfg(grad_clip=0.0, autocast="bfloat16"))
    start = params(full.model)
    m_full = full.step(build_rl_batch(groups(), **kw))
    m_mixed = mixed.step(build_rl_batch(groups(), **kw))
    assert all(p.dtype == torch.float32 for p in mixed.model.parameters())
    assert m_mixed["loss"] == pytest.approx(m_full["loss"], rel=3e-2)
    assert m_mixed["loss"] != m_full["loss"]
    delta = lambda t: torch.cat([(t[k] - start[k]).flatten() for k in start])  # noqa: E731
    d_full, d_mixed = delta(params(full.model)), delta(params(mixed.model))
    assert torch.nn.functional.cosine_similarity(d_full, d_mixed, dim=0) > 0.9
