"""The trained model's forward: log π of chosen tokens, a prefix all rows share run once.

What the trainer differentiates (`Trainer.step`), and what the real-time rows, the routing
gap and the teacher-forced scores compute without gradients: one implementation.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch
from torch import Tensor

from shadowrl.rl.loss import linear_token_logprobs


def token_logprobs(
    model: Any,
    input_ids: Tensor,
    loss_mask: Tensor | None = None,
    chunk: int = 1024,
    *,
    share: bool = True,
    temperature: float = 1.0,
) -> Tensor:
    """log π(token_t | tokens_<t) [B, T] at the positions in `loss_mask`, 0 elsewhere.

    Only what the loss reads is computed: the decoder runs up to the last masked
    position (trailing tool output and padding are cut), then the LM head and
    log-softmax run on the hidden states that predict a masked token, in chunks.
    In agentic rollouts most tokens are prompt and tool output, so this skips most
    of the [B, T, V] logits a plain `model(...).logits` would build. No mask = every
    position but the first (it has no prefix). Under `routing.replaying` pass
    `share=False`: replay wants one router call per layer for the whole batch.
    `temperature`: log-softmax of logits / temperature, the distribution the engine
    samples from (and reports the logprob of) at that temperature.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 (greedy rows are not trained): {temperature}")
    b, t = input_ids.shape
    mask = torch.ones_like(input_ids, dtype=torch.bool) if loss_mask is None else loss_mask
    mask = mask.clone()
    mask[:, 0] = False
    out = torch.zeros(b, t, device=input_ids.device, dtype=torch.float32)
    cols = mask.any(0).nonzero()
    if cols.numel() == 0:
        return out
    last = int(cols[-1])  # hidden state at t predicts token t + 1: inputs [0, last) suffice
    hidden = decoder_hidden(model, input_ids[:, :last], share=share)
    picked = mask[:, 1 : last + 1]  # [B, last]: does hidden[:, j] predict a masked token?
    head = model.get_output_embeddings()
    rows, bias = hidden[picked], head.bias
    if temperature != 1.0:  # (h·W + b) / τ = (h / τ)·W + b / τ
        rows, bias = rows / temperature, None if bias is None else bias / temperature
    lp = linear_token_logprobs(
        rows, head.weight, input_ids[:, 1 : last + 1][picked], bias=bias, chunk=chunk
    )
    return out.masked_scatter(mask, lp)


def decoder_hidden(model: Any, input_ids: Tensor, *, share: bool = True) -> Tensor:
    """input_ids [B, T] -> final hidden states [B, T, D]; a prefix all rows share runs once.

    Rollouts of one step share a long prefix (the system prompt and tool schemas; the
    whole task prompt within a group), so it is encoded for one row and its KV cache
    repeated to every row: exact (causal attention, same positions), and the prefix's
    gradient is the sum over rows, which the repeat's backward computes. `share=False`
    runs every row in full (routing replay wants one router call per layer for the batch).
    """
    decoder = model.get_decoder()
    b, t = input_ids.shape
    same = (input_ids == input_ids[:1]).all(0).cumprod(0)
    shared = min(int(same.sum()), t - 1) if b > 1 and share else 0
    if decoder.training and torch.is_grad_enabled() and _checkpointed(decoder):
        shared = 0  # checkpointed layers drop the KV cache the shared prefix is passed in
    if shared == 0:
        return decoder(input_ids=input_ids, use_cache=False).last_hidden_state
    prefix = decoder(input_ids=input_ids[:1, :shared], use_cache=True)
    cache = _cache_of(prefix)
    cache.batch_repeat_interleave(b)
    rest = decoder(
        input_ids=input_ids[:, shared:], use_cache=True, **{_cache_kwarg(decoder): cache}
    )
    return torch.cat([prefix.last_hidden_state.expand(b, -1, -1), rest.last_hidden_state], 1)


# transformers 5.2x renamed `past_key_values` to `cache` (argument and output); older 5.x
# releases (seen: 5.17 on a GPU image) only know the old name and silently ignore the new.
def _cache_of(output: Any) -> Any:
    return output.cache if hasattr(output, "cache") else output.past_key_values


def _cache_kwarg(decoder: Any) -> str:
    return _cache_kwarg_of(type(decoder).forward)


@functools.cache  # once per decoder class, not once per microbatch
def _cache_kwarg_of(forward: Any) -> str:
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


def enable_checkpointing(model: Any) -> None:
    """Non-reentrant activation checkpointing under either transformers spelling."""
    enable = getattr(model, "activation_checkpointing_enable", None)
    (enable or model.gradient_checkpointing_enable)({"use_reentrant": False})


def _checkpointed(decoder: Any) -> bool:
    return any(getattr(layer, "gradient_checkpointing", False) for layer in decoder.layers)


class PolicyLogprobs(torch.nn.Module):
    """`token_logprobs` of the trained model as a module: under FSDP it is the root unit,
    whose forward gathers the embedding, final norm and LM head (`fsdp.py`)."""

    def __init__(self, model: Any, chunk: int, share: bool, temperature: float = 1.0) -> None:
        super().__init__()
        self.model, self.chunk, self.share, self.temperature = model, chunk, share, temperature

    def forward(self, input_ids: Tensor, loss_mask: Tensor, share: bool = True) -> Tensor:
        """`share=False`: run every row's prefix itself (routing replay needs each row's)."""
        return token_logprobs(
            self.model,
            input_ids,
            loss_mask,
            self.chunk,
            share=self.share and share,
            temperature=self.temperature,
        )
