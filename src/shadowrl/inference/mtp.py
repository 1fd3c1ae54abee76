"""Multi-token-prediction (MTP) draft heads: K small modules that guess tokens t+2..t+K+1.

The engine's speculative step (`speculative.py`) drafts k tokens with these heads and
verifies them in one forward of the main model. The heads are trained by
self-distillation (`rl/mtp_distill.py`): head j learns the main LM head's distribution
j positions further on, from the backbone's detached final hidden state.

Design: sequential residual modules (a DeepSeek-V3-style chain without the attention
block, as in Hydra): head j maps (its predecessor's state h_{j-1}, the embedding of
the token drafted before it) to h_j = h_{j-1} + W_j silu(U_j [norm(h_{j-1}); norm(e)]),
and reads logits through the main model's own (frozen) LM head. `kind="medusa"`
drops the token input: every head reads only the backbone's state h_0 (Medusa-1),
so all K drafts come out of one batched LM-head product instead of K chained ones.
Why sequential is the default, measured on SmolLM2-135M (`benchmarks/speculative.py
--ablation` at commit 5a28cdc, `benchmarks/results/speculative_5a28cdc.json`, field
`heads.kind_ablation`): the same 2.6k windows of its own T=1 code
completions, the same 248 steps (300 s on 2 CPU cores), held-out agreement per draft
position 2/3/4 - greedy chain (all earlier positions accepted too): sequential
0.34/0.12/0.04, Medusa 0.24/0.04/0.004; overlap sum(min(p, q)) (the T=1 acceptance
of rejection sampling): sequential 0.35/0.29/0.26, Medusa 0.27/0.16/0.11. The token
input is what lets later heads agree at all (a Medusa head must guess the tokens in
between without seeing them); the price is k chained LM-head products per draft
instead of one batched one. No attention block: a draft module with its
own KV cache would need its own rollback; a residual MLP needs none.

Draft vocabulary (FR-Spec): the heads score only the `vocab` most frequent tokens of
their distillation data (4,096 by default, `DistillConfig.draft_vocab`), through those
rows of the LM head; verification keeps the full head, so exactness is untouched and a
token outside is produced by the main model, never drafted. The LM head is what a
draft step costs: measured by `benchmarks/speculative.py` (`heads.draft_cost` in
`benchmarks/results/speculative.json`, 2026-12-01, 1 thread, box load ~21), a k=3 draft
takes 47 ms with 4,096 rows vs 184 ms with all 49,152 at batch 1, and 101 vs 865 ms at
batch 8, beside an 842 ms verify at batch 1. The same rows make a distillation step
cheaper: 471 steps in 600 s (the full-vocabulary runs before it: 34 and 248 steps in
300 s, at other box loads). The price is coverage: 88 % of the main head's probability mass on held-out
windows falls inside the 4,096 tokens, the ceiling of temperature-1 acceptance; held-out
greedy chain agreement was 0.31/0.13/0.03 at positions 2/3/4 (248 full-vocabulary steps
before: 0.34/0.12/0.04).

Weights start from scratch: W_j = 0, so an untrained head j predicts exactly what the
main head predicts at t+1 (a sane prior for "the next token"), and gradients reach
U_j through the identity branch. Saved as `mtp.safetensors` beside the checkpoint,
with its shape in the file's metadata so it loads alone (`load_heads`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor, nn

from shadowrl.inference.drafts import DRAFTS, HEADS_FILE

Kind = Literal["sequential", "medusa"]
FILENAME = HEADS_FILE
PREFIX = DRAFTS  # the heads' tensor names in an engine and in a published weight state


class _RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x32 * self.weight.float()).to(x.dtype)


class _Head(nn.Module):
    """One residual step in the LM head's input space."""

    def __init__(self, hidden: int, width: int, takes_token: bool) -> None:
        super().__init__()
        self.state_norm = _RMSNorm(hidden)
        self.token_norm = _RMSNorm(hidden) if takes_token else None
        self.up = nn.Linear(hidden * (2 if takes_token else 1), width, bias=False)
        self.down = nn.Linear(width, hidden, bias=False)
        nn.init.zeros_(self.down.weight)  # from scratch, starting as the identity

    def forward(self, state: Tensor, token_embedding: Tensor | None) -> Tensor:
        x = self.state_norm(state)
        if self.token_norm is not None:
            assert token_embedding is not None
            x = torch.cat((x, self.token_norm(token_embedding)), dim=-1)
        return state + self.down(nn.functional.silu(self.up(x)))


class MTPHeads(nn.Module):
    """K draft heads over a decoder's final (normed) hidden state.

    `vocab` > 0: the heads draft only from that many tokens (`self.vocab`, ascending ids,
    filled by `set_vocab`), scored by those rows of the LM head; 0 = the full vocabulary.
    """

    def __init__(
        self, hidden: int, k: int, kind: Kind = "sequential", width: int = 0, vocab: int = 0
    ) -> None:
        super().__init__()
        if k < 1:
            raise ValueError(f"need at least one head, got k={k}")
        if kind not in ("sequential", "medusa"):
            raise ValueError(f"unknown MTP kind {kind!r}; known: sequential, medusa")
        self.hidden, self.k, self.kind, self.width = hidden, k, kind, width or hidden
        takes = kind == "sequential"
        self.heads = nn.ModuleList(_Head(hidden, self.width, takes) for _ in range(k))
        self.vocab: Tensor
        self.register_buffer("vocab", torch.arange(vocab, dtype=torch.int64))

    @property
    def truncated(self) -> bool:
        return self.vocab.numel() > 0

    def set_vocab(self, ids: Tensor) -> None:
        """Draft only from token ids `ids` (kept sorted: see `frequency_vocab`)."""
        if ids.numel() != self.vocab.numel():
            raise ValueError(
                f"draft vocab of {ids.numel()} ids for heads sized {self.vocab.numel()}"
            )
        self.vocab.copy_(ids.sort().values)

    def draft_rows(self, weight: Tensor) -> Tensor:
        """The LM head's rows the heads score ([V', H]; all of `weight` when not truncated)."""
        return weight.index_select(0, self.vocab) if self.truncated else weight

    def to_full(self, ids: Tensor) -> Tensor:
        """Draft-vocabulary indices -> token ids."""
        return self.vocab[ids] if self.truncated else ids

    @property
    def sequential(self) -> bool:
        return self.kind == "sequential"

    def step(self, j: int, state: Tensor, token_embedding: Tensor | None) -> Tensor:
        """Head j's state from its predecessor's (Medusa: the backbone's) and a token's embedding."""
        return self.heads[j](state, token_embedding if self.sequential else None)

    def unroll(self, hidden: Tensor, embeddings: Tensor) -> Tensor:
        """Every head's state for windows fed the true tokens (training): [N, K, H].

        hidden [N, H] is the backbone's state at t; embeddings [N, K, H] those of tokens
        t+1..t+K. Head j's state predicts token t+j+2.
        """
        states, state = [], hidden
        for j in range(self.k):
            state = self.step(j, state if self.sequential else hidden, embeddings[:, j])
            states.append(state)
        return torch.stack(states, dim=1)

    def metadata(self) -> dict[str, str]:
        return {"shape": json.dumps({"hidden": self.hidden, "k": self.k, "kind": self.kind,
                                     "width": self.width, "vocab": self.vocab.numel()})}  # fmt: skip


def for_model(model: Any, k: int, kind: Kind = "sequential", vocab: int = 0) -> MTPHeads:
    """Fresh heads sized for a Hugging Face decoder, on its device and dtype."""
    param = next(model.parameters())
    heads = MTPHeads(model.config.hidden_size, k, kind, vocab=vocab)
    return heads.to(device=param.device, dtype=param.dtype)


def frequency_vocab(sequences: Sequence[Sequence[int]], size: int, vocab_size: int) -> Tensor:
    """The `size` most frequent token ids of `sequences` (FR-Spec), ascending.

    Ties and tokens never seen rank by id: BPE gives frequent merges low ids, so that
    is a corpus-frequency prior where the data is too small to rank everything.
    """
    counts = torch.zeros(vocab_size, dtype=torch.float64)
    for ids in sequences:
        counts.index_add_(0, torch.tensor(list(ids), dtype=torch.int64),
                          torch.ones(len(ids), dtype=torch.float64))  # fmt: skip
    rank = counts - torch.arange(vocab_size, dtype=torch.float64) / vocab_size  # ties: low id
    return rank.topk(min(size, vocab_size)).indices.sort().values


def heads_path(checkpoint: str | Path) -> Path:
    """Where a checkpoint directory's heads live."""
    return Path(checkpoint) / FILENAME


def save_heads(heads: MTPHeads, path: str | Path) -> Path:
    """Write heads to `path` (a directory gets `mtp.safetensors` inside it)."""
    from safetensors.torch import save_file

    p = Path(path)
    p = p / FILENAME if p.is_dir() else p
    state = {k: v.detach().contiguous().cpu() for k, v in heads.state_dict().items()}
    save_file(state, str(p), metadata=heads.metadata())
    return p


def load_heads(path: str | Path, device: str | torch.device = "cpu") -> MTPHeads:
    """Heads from `mtp.safetensors` (or a directory holding one), with no model needed."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    p = Path(path)
    p = p / FILENAME if p.is_dir() else p
    if not p.is_file():
        raise FileNotFoundError(f"no MTP heads at {p}; train them: shadowrl mtp distill")
    with safe_open(str(p), framework="pt") as f:
        shape = json.loads((f.metadata() or {})["shape"])
    heads = MTPHeads(shape["hidden"], shape["k"], shape["kind"], shape["width"],
                     shape.get("vocab", 0))  # fmt: skip
    state = load_file(str(p))
    state.setdefault("vocab", heads.vocab)  # heads saved before draft vocabularies existed
    heads.load_state_dict(state)
    dtype = state["heads.0.up.weight"].dtype
    return heads.to(device=device, dtype=dtype).eval()
