"""The decoder forward pass over a Hugging Face model's own modules and our KV cache.

Hugging Face's `forward` with a `DynamicCache` wants one shared length for the batch,
which makes continuous batching a game of left-padding and re-aligning caches. Here
the loop over layers is written out (it is short for Llama/Qwen-style decoders) and
calls the model's own projections, norms, MLPs and rotary embedding, so weights swapped
into the model are used at the next step with no copy, and rope variants stay HF's.

Two entry points: `prefill` runs a batch of prompts into their slots in one padded
forward (causal attention); `decode` runs one new token for each of the first B slots,
each attending to its own length through a boolean mask over the packed cache. Decode
never reads a tensor back to the host, so it can be captured in a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from shadowrl.inference.kv import KVCache, Shape
from shadowrl.inference.native import row_attention
from shadowrl.inference.native_layer import decode_layers

SUPPORTED = ("llama", "qwen2", "qwen3", "qwen3_moe")  # MoE: HF's own sparse MLP block


def _read(
    cache: KVCache, layer: int, slots: Tensor | int, span: int, like: Tensor
) -> tuple[Tensor, Tensor]:
    """`cache.read` in `like`'s dtype: a cache may store less (`engine.kv_dtype`)."""
    keys, values = cache.read(layer, slots, span)
    return keys.to(like.dtype), values.to(like.dtype)


def _rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Decoder:
    """Runs a Llama/Qwen (dense or Qwen3-MoE) causal LM step by step against a `KVCache`."""

    def __init__(
        self, model: nn.Module, cpu_attention: str = "auto", cpu_decode: str = "torch"
    ) -> None:
        """`cpu_attention`: how a CPU decode step attends row by row (`native.row_attention`:
        'auto', 'native' or 'torch'); `cpu_decode`: whether it runs each layer in one C
        call (`native_layer.decode_layers`, the same choices)."""
        cfg: Any = model.config
        if cfg.model_type not in SUPPORTED:
            raise ValueError(f"unsupported architecture {cfg.model_type!r}; known: {SUPPORTED}")
        self.model = model
        inner: Any = model.model
        self.embed, self.norm, self.rotary = inner.embed_tokens, inner.norm, inner.rotary_emb
        self.layers = list(inner.layers)
        self.lm_head: Any = model.lm_head
        attn: Any = self.layers[0].self_attn
        heads = cfg.num_attention_heads
        self.shape = Shape(
            layers=len(self.layers),
            heads=heads,
            kv_heads=cfg.num_key_value_heads,
            head_dim=attn.q_proj.out_features // heads,
        )
        self.qk_norm = hasattr(attn, "q_norm")  # Qwen3 normalises q and k per head
        device = self.embed.weight.device
        self.attend_rows = row_attention(cpu_attention, self.shape.head_dim, device)
        self.decode_layers = decode_layers(cpu_decode, model, self.layers, self.shape)

    def _qkv(self, attn: Any, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, ...]:
        """Project x [B, T, hidden] to rotated q [B, H, T, D] and k, v [B, Hkv, T, D]."""
        b, t, _ = x.shape
        d = self.shape.head_dim
        q = attn.q_proj(x).view(b, t, -1, d)
        k = attn.k_proj(x).view(b, t, -1, d)
        v = attn.v_proj(x).view(b, t, -1, d).transpose(1, 2)
        if self.qk_norm:
            q, k = attn.q_norm(q), attn.k_norm(k)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return _rotate(q.transpose(1, 2), cos, sin), _rotate(k.transpose(1, 2), cos, sin), v

    def _mlp(self, layer: Any, h: Tensor) -> Tensor:
        return h + layer.mlp(layer.post_attention_layernorm(h))

    @torch.inference_mode()
    def prefill(
        self,
        prompts: Sequence[Sequence[int]],
        slots: Sequence[int],
        cache: KVCache,
        starts: Sequence[int] | None = None,
    ) -> Tensor:
        """Run prompts into `slots` in one forward; return each last position's logits [N, V].

        Row i's tokens go at positions starts[i]... (default 0); the KV of positions before
        starts[i] must already be in its slot (a prefix-cache hit). Rows are right-padded to
        the longest: a real position never attends to the padding after it, and the padding
        is written at the row's end, where decode overwrites it before it is ever read. On
        CPU, where padded positions cost as much as real ones, each prompt runs alone.
        """
        if len(prompts) > 1 and self.embed.weight.device.type == "cpu":
            return torch.cat([  # on CPU, padding costs its full share: one prompt at a time
                self.prefill([p], [slot], cache, None if starts is None else [start])
                for p, slot, start in zip(prompts, slots, starts or [0] * len(prompts),
                                          strict=True)
            ])  # fmt: skip
        n, t = len(prompts), max(len(p) for p in prompts)
        offsets = list(starts) if starts is not None else [0] * n
        ends = [s + len(p) for s, p in zip(offsets, prompts, strict=True)]
        cache.prepare(slots, offsets, [e + 1 for e in ends])  # + 1: the padding's spill
        device = self.embed.weight.device
        ids = torch.tensor([[*p, *[0] * (t - len(p))] for p in prompts], device=device)
        index = torch.tensor(list(slots), device=device)
        last = torch.tensor([len(p) - 1 for p in prompts], device=device)
        steps = torch.arange(t, device=device)[None]
        end = torch.tensor(ends, device=device)[:, None]
        positions = torch.minimum(torch.tensor(offsets, device=device)[:, None] + steps, end)
        span = max(ends)
        mask = None  # fresh prompts attend causally among their own tokens (no mask to build)
        # After a cache hit, every cached or new position up to one's own; so too where the
        # cache rounds what it stores (`engine.kv_dtype`), so that a prompt attends over the
        # same rounded keys whether or not the prefix cache held part of it.
        if starts is not None or cache.dtype != self.embed.weight.dtype:
            seen = (torch.arange(span, device=device)[None, None] <= positions[:, :, None])[:, None]
            # additive, built once: SDPA would turn a boolean mask into this in every layer
            mask = torch.zeros(seen.shape, dtype=self.embed.weight.dtype, device=device)
            mask.masked_fill_(~seen, float("-inf"))
        h = self.embed(ids)
        cos, sin = self.rotary(h, positions)
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            q, k, v = self._qkv(attn, layer.input_layernorm(h), cos, sin)
            cache.write(i, index, positions, k.transpose(1, 2), v.transpose(1, 2))
            if mask is None:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            else:
                keys, values = _read(cache, i, index, span, q)
                out = F.scaled_dot_product_attention(
                    q, keys, values, attn_mask=mask, enable_gqa=True
                )
            h = h + attn.o_proj(out.transpose(1, 2).reshape(n, t, -1))
            h = self._mlp(layer, h)
        return self.lm_head(self.norm(h[torch.arange(n, device=device), last]))

    def decode(self, tokens: Tensor, lengths: Tensor, cache: KVCache, span: int) -> Tensor:
        """One step for slots 0..B-1: `tokens` [B] go at positions `lengths` [B].

        Returns logits [B, V]. Attention reads the first `span` > max(lengths) positions
        (a host-side number, so nothing here waits on the device: a CUDA graph captures it
        at a fixed span and the mask hides what lies beyond each row's length); on CPU,
        from the row attention's `min_span` (every span with the C kernel), each row reads
        only its own length instead, and `engine.cpu_decode` may run each layer of such a
        step in one C call (`native_layer.py`). Call it under `torch.inference_mode()`, as
        `step.decode_and_sample` does: a decorator here would break `torch.compile` of this
        method, which cannot trace the mode switch.
        """
        b = tokens.shape[0]
        s = self.shape
        rows = torch.arange(b, device=tokens.device)
        # One row too: its own length rather than the span, and the paged cache reads it in place.
        per_row = tokens.device.type == "cpu" and span >= self.attend_rows.min_span
        ends = (lengths + 1).tolist() if per_row else []  # on CPU: no device to wait for
        steps = torch.arange(span, device=tokens.device)
        mask = None if per_row else (steps[None] <= lengths[:, None])[:, None, None]
        h = self.embed(tokens[:, None])
        cos, sin = self.rotary(h, lengths[:, None])
        if ends and self.decode_layers.takes(h, cache):  # each layer in one C call
            return self.lm_head(self.norm(self.decode_layers(h, cos, sin, ends, cache)))
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            q, k, v = self._qkv(attn, layer.input_layernorm(h), cos, sin)
            cache.write(i, rows, lengths[:, None], k.transpose(1, 2), v.transpose(1, 2))
            # GQA without repeating KV: each kv head's query group acts as a short query.
            grouped = q.view(b, s.kv_heads, s.heads // s.kv_heads, s.head_dim)
            if ends:  # each row its own length (the paged cache: in place where it can)
                out = self.attend_rows(grouped, cache.read_rows(i, ends))
            else:
                keys, values = _read(cache, i, b, span, q)
                out = F.scaled_dot_product_attention(grouped, keys, values, attn_mask=mask)
            h = h + attn.o_proj(out.reshape(b, 1, -1))
            h = self._mlp(layer, h)
        return self.lm_head(self.norm(h[:, 0]))

    def extend(self, tokens: Tensor, lengths: Tensor, cache: KVCache, span: int) -> Tensor:
        """T tokens for each of slots 0..B-1 at positions lengths..lengths+T-1 (a verify).

        tokens [B, T]; returns the final normed hidden states [B, T, hidden] (the LM
        head's input, which the draft heads also read). Each position attends to its
        row's cache up to itself; positions past a row's accepted tokens are simply
        overwritten by a later step, so rejecting drafts needs no cache rollback.
        """
        b, t = tokens.shape
        device = tokens.device
        rows = torch.arange(b, device=device)
        positions = lengths[:, None] + torch.arange(t, device=device)[None]
        mask = (torch.arange(span, device=device)[None, None] <= positions[:, :, None])[:, None]
        h = self.embed(tokens)
        cos, sin = self.rotary(h, positions)
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            q, k, v = self._qkv(attn, layer.input_layernorm(h), cos, sin)
            cache.write(i, rows, positions, k.transpose(1, 2), v.transpose(1, 2))
            keys, values = _read(cache, i, b, span, q)
            out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=True)
            h = h + attn.o_proj(out.transpose(1, 2).reshape(b, t, -1))
            h = self._mlp(layer, h)
        return self.norm(h)
