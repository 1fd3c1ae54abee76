"""MTP self-distillation: train the draft heads to predict the main head's own distributions.

    prompts (suites, traces or rollouts)  ->  the model's own completions (engine, T=1)
        ->  the frozen backbone's final hidden states, once, detached
        ->  heads trained on random windows: KL to the main head at t+1..t+k (`mtp_loss`)
        ->  a report of acceptance per draft position on held-out generations

The backbone never sees a gradient: its states are computed under `no_grad`, the LM
head is applied through a detached weight, and only the heads are in the optimizer.
Windows are independent (the heads have no attention), so a batch is a random draw of
positions across all sequences, and a step costs k LM-head products per window.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.distributed.tensor import DTensor

from shadowrl.agent import render_prompt
from shadowrl.inference import MTPHeads, for_model, frequency_vocab
from shadowrl.rl.mtp_config import DistillConfig
from shadowrl.rl.mtp_loss import agreement, mtp_distill_loss
from shadowrl.types import Message, SamplingParams

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class States:
    """Detached backbone states of many sequences, concatenated: hidden [P, H], tokens [P]."""

    hidden: Tensor
    tokens: Tensor
    starts: Tensor  # [W] window starts t with t+k+1 inside one sequence's completion

    def windows(self, index: Tensor, k: int) -> tuple[Tensor, Tensor, Tensor]:
        """(state at t [N, H], embeddings' token ids t+1..t+k [N, k], teacher states t+1..t+k [N, k, H])."""
        t = self.starts[index]
        ahead = t[:, None] + torch.arange(1, k + 1)[None]
        return self.hidden[t], self.tokens[ahead], self.hidden[ahead]


@dataclass(frozen=True)
class Frozen:
    """All the heads read of the policy besides its states: the LM head and the input
    embeddings, detached float32 copies (never in the heads' graph)."""

    head: Tensor  # [V, H]
    embed: Tensor  # [V, H]


def frozen(model: Any) -> Frozen:
    """`model`'s LM head and embeddings as whole tensors. Under FSDP a sharded one is
    gathered (a collective: every rank calls it) and a gathered one copied before the
    shards are freed again; the copies cost 2·V·H floats while a re-distillation runs."""

    def whole(t: Tensor) -> Tensor:  # one fresh float32 copy either way
        if isinstance(t, DTensor):
            return t.full_tensor().detach().float()
        return t.detach().to(torch.float32, copy=True)

    head = whole(model.lm_head.weight)
    embed = model.get_input_embeddings().weight
    return Frozen(head, head if embed is model.lm_head.weight else whole(embed))


def code_prompt(task: Any) -> str:
    """A task as a coding request: its statement and the code the gold patch touches."""
    old = [line[1:] for line in task.patch.splitlines() if line[:1] in (" ", "-")]
    code = "\n".join(line for line in old if not line.startswith("--"))
    return (
        f"{task.problem_statement.strip()}\n\nThe code around the bug:\n```python\n{code}\n```\n"
        "Write the corrected code."
    )


def suite_prompts(tokenizer: Any, suite: str, n: int, split: str = "train") -> list[list[int]]:
    """Chat prompts [ids] from a suite's tasks (`split`), cycling if it has fewer than n."""
    from shadowrl.tasks import load_suite

    tasks = load_suite(suite, split)  # type: ignore[arg-type]
    if not tasks:
        raise ValueError(f"suite {suite!r} has no {split} tasks")
    return [
        render_prompt(tokenizer, [Message("user", code_prompt(tasks[i % len(tasks)]))], None)
        for i in range(n)
    ]


def trajectory_prompts(path: str, n: int) -> list[list[int]]:
    """The context before each generated span of recorded trajectories (traces, rollouts)."""
    from shadowrl.rl.demos import load_trajectories

    prompts: list[list[int]] = []
    for traj in load_trajectories(path):
        for seg in traj.segments:
            mask, ids = seg.loss_mask, seg.token_ids
            for i in range(1, len(ids)):
                if mask[i] and not mask[i - 1]:
                    prompts.append(list(ids[:i]))
    if not prompts:
        raise ValueError(f"{path}: no trajectory with a generated span")
    return prompts[-n:]


def own_generations(
    engine: Any, prompts: Sequence[Sequence[int]], cfg: DistillConfig, seed: int = 0
) -> list[tuple[list[int], int]]:
    """(prompt + completion ids, prompt length) for `samples_per_prompt` completions each."""
    sampling = [
        SamplingParams(max_new_tokens=cfg.new_tokens, temperature=cfg.temperature,
                       seed=seed * 1_000_003 + i)
        for i in range(len(prompts) * cfg.samples_per_prompt)
    ]  # fmt: skip
    repeated = [list(p) for p in prompts for _ in range(cfg.samples_per_prompt)]
    gens = engine.generate_batch(repeated, sampling)
    return [(p + list(g.token_ids), len(p)) for p, g in zip(repeated, gens, strict=True)]


@torch.no_grad()
def backbone_states(model: Any, sequences: Sequence[tuple[list[int], int]], k: int) -> States:
    """Final normed hidden states of every sequence (frozen model), and the window starts.

    A window starts at the last prompt position or later, so every target is generated.
    """
    hidden: list[Tensor] = []
    tokens: list[Tensor] = []
    starts: list[int] = []
    offset = 0
    device = next(model.parameters()).device
    for ids, prompt_len in sequences:
        ids_t = torch.tensor([ids], device=device)
        h = model.model(input_ids=ids_t).last_hidden_state[0].float().cpu()
        hidden.append(h)
        tokens.append(ids_t[0].cpu())
        first, last = prompt_len - 1, len(ids) - k - 1
        starts += range(offset + first, offset + max(first, last))
        offset += len(ids)
    return States(torch.cat(hidden), torch.cat(tokens), torch.tensor(starts, dtype=torch.int64))


def head_and_teacher_logits(
    heads: MTPHeads, lm: Frozen, states: States, index: Tensor, *, full: bool = False
) -> tuple[Tensor, Tensor]:
    """Heads' logits and the main head's (detached) for windows `index`: [N, k, V] each.

    Both over the heads' draft vocabulary (training: the teacher renormalised there, and
    a step costs V' rows of the LM head, not V), or with `full` over the whole
    vocabulary, the heads' -inf outside theirs (the report: true acceptance).
    """
    k = heads.k
    weight, embed = lm.head, lm.embed
    h, ahead_ids, teacher_h = states.windows(index, k)
    rows = heads.draft_rows(weight)
    with torch.no_grad():
        teacher = F.linear(teacher_h, weight if full else rows)
    heads_out = F.linear(heads.unroll(h, F.embedding(ahead_ids, embed)), rows)
    if full and heads.truncated:
        spread = heads_out.new_full(teacher.shape, float("-inf"))
        heads_out = spread.index_copy(-1, heads.vocab, heads_out)
    return heads_out, teacher


@dataclass
class DistillReport:
    """What a distillation did: steps, final loss, agreement per draft position (held out)."""

    steps: int
    seconds: float
    train_windows: int
    heldout_windows: int
    loss: float
    kl: list[float]
    heldout: dict[str, list[float]]


def distill(
    heads: MTPHeads,
    model: Any,
    train: States,
    heldout: States,
    cfg: DistillConfig,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
    seed: int = 0,
) -> DistillReport:
    """Train `heads` (only them) on windows of `train`; report agreement on `heldout`."""
    lm = frozen(model)
    heads.float().train()
    optimizer = torch.optim.AdamW(heads.parameters(), lr=cfg.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    start, step, loss_value, kl = time.monotonic(), 0, float("nan"), [float("nan")] * heads.k
    while step < cfg.steps:
        if cfg.time_budget_s and time.monotonic() - start > cfg.time_budget_s:
            break
        index = torch.randint(len(train.starts), (cfg.batch_windows,), generator=gen)
        head_logits, teacher = head_and_teacher_logits(heads, lm, train, index)
        loss, per_head = mtp_distill_loss(head_logits, teacher)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step, loss_value, kl = step + 1, loss.item(), per_head.tolist()
        if on_step is not None:
            on_step(step, {"loss": loss_value, **{f"kl_{j + 1}": v for j, v in enumerate(kl)}})
    heads.eval()
    return DistillReport(
        step, time.monotonic() - start, len(train.starts), len(heldout.starts), loss_value, kl,
        evaluate(heads, lm, heldout),
    )  # fmt: skip


@torch.no_grad()
def evaluate(
    heads: MTPHeads, lm: Frozen, states: States, chunk: int = 128
) -> dict[str, list[float]]:
    """Agreement per draft position over all windows of `states` (weighted by windows),
    against the main head's full distribution; `coverage`: its mass inside the draft
    vocabulary (the ceiling of temperature-1 acceptance)."""
    totals: dict[str, Tensor] = {}
    n = len(states.starts)
    for begin in range(0, n, chunk):
        index = torch.arange(begin, min(begin + chunk, n))
        head_logits, teacher = head_and_teacher_logits(heads, lm, states, index, full=True)
        found = agreement(head_logits, teacher)
        inside = teacher.softmax(-1)[..., heads.vocab] if heads.truncated else None
        found["coverage"] = [1.0] * heads.k if inside is None else inside.sum(-1).mean(0).tolist()
        for name, values in found.items():
            totals[name] = totals.get(name, torch.zeros(heads.k)) + torch.tensor(values) * len(
                index
            )
    return {name: (v / max(n, 1)).tolist() for name, v in totals.items()}


def split_sequences(
    sequences: list[tuple[list[int], int]], fraction: float
) -> tuple[list[tuple[list[int], int]], list[tuple[list[int], int]]]:
    """(train, held out): every 1/fraction-th generation is held out (at least one if any)."""
    if fraction <= 0 or len(sequences) < 2:
        return sequences, sequences[:0]
    every = min(max(2, round(1 / fraction)), len(sequences))
    held = [s for i, s in enumerate(sequences) if i % every == every - 1]
    return [s for i, s in enumerate(sequences) if i % every != every - 1], held


def fresh_heads(
    model: Any, cfg: DistillConfig, sequences: Sequence[tuple[list[int], int]] = (), seed: int = 0
) -> MTPHeads:
    """Heads from scratch (seeded), in float32 for training, drafting from the
    `cfg.draft_vocab` most frequent tokens of `sequences` (prompts and completions)."""
    size = cfg.draft_vocab if sequences else 0
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        heads = for_model(model, cfg.k, cfg.kind, size).float()
    if size:
        vocab_size = model.get_input_embeddings().weight.shape[0]
        if size >= vocab_size:
            return for_model(model, cfg.k, cfg.kind).float()
        heads.set_vocab(frequency_vocab([ids for ids, _ in sequences], size, vocab_size))
    return heads


def distill_prompts(tokenizer: Any, cfg: DistillConfig) -> list[list[int]]:
    """The prompts `cfg.data` names."""
    if cfg.data == "sft":
        return suite_prompts(tokenizer, cfg.suite, cfg.prompts)
    if not cfg.source:
        raise ValueError(f"data={cfg.data!r} needs mtp.source, a trajectories JSONL file")
    return trajectory_prompts(cfg.source, cfg.prompts)


def self_distill(
    model: Any,
    tokenizer: Any,
    cfg: DistillConfig,
    engine_config: Any = None,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
    seed: int = 0,
) -> tuple[MTPHeads, DistillReport]:
    """The whole recipe: prompts -> own generations -> detached states -> trained heads;
    `seed` (the run's `distill` stream, `seeds.py`) keys every draw of it."""
    from shadowrl.inference import build_engine

    prompts = distill_prompts(tokenizer, cfg)
    log.info("generating %d completions of %d tokens", len(prompts) * cfg.samples_per_prompt,
             cfg.new_tokens)  # fmt: skip
    with build_engine(model, tokenizer, engine_config, seed=seed) as engine:
        sequences = own_generations(engine, prompts, cfg, seed)
    train_seqs, held_seqs = split_sequences(sequences, cfg.heldout_fraction)
    log.info("backbone states of %d sequences", len(sequences))
    train, heldout = (backbone_states(model, s, cfg.k) for s in (train_seqs, held_seqs))
    if not len(train.starts):
        raise ValueError("generations too short to train on: raise mtp.new_tokens")
    heads = fresh_heads(model, cfg, train_seqs, seed)
    return heads, distill(heads, model, train, heldout, cfg, on_step, seed)
