"""The decoder forward pass over a Hugging Face model's own modules and our KV cache.

Hugging Face's `forward` with a `DynamicCache` wants one shared length for the batch,
which makes continuous batching a game of left-padding and re-aligning caches. Here
the loop over layers is written out (it is short for Llama/Qwen-style decoders) and
calls the model's own projections, norms, MLPs and rotary embedding, so weights swapped
into the model are used at the next step with no copy, and rope variants stay HF's.

Two entry points: `prefill` runs one prompt into one slot (causal attention, no
padding); `decode` runs one new token for each of the first B slots, each attending to
its own length through a boolean mask over the packed cache.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from shadowrl.inference.kv import KVCache

SUPPORTED = ("llama", "qwen2", "qwen3")


@dataclass(frozen=True)
class Shape:
    """The attention geometry of a decoder."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int


def _rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Decoder:
    """Runs a Llama/Qwen causal LM step by step against a `KVCache`."""

    def __init__(self, model: nn.Module) -> None:
        cfg = model.config
        if cfg.model_type not in SUPPORTED:
            raise ValueError(f"unsupported architecture {cfg.model_type!r}; known: {SUPPORTED}")
        self.model = model
        inner = model.model
        self.embed, self.norm, self.rotary = inner.embed_tokens, inner.norm, inner.rotary_emb
        self.layers = list(inner.layers)
        self.lm_head = model.lm_head
        attn = self.layers[0].self_attn
        heads = cfg.num_attention_heads
        self.shape = Shape(
            layers=len(self.layers),
            heads=heads,
            kv_heads=cfg.num_key_value_heads,
            head_dim=attn.q_proj.out_features // heads,
        )
        self.qk_norm = hasattr(attn, "q_norm")  # Qwen3 normalises q and k per head

    def _qkv(self, attn: nn.Module, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, ...]:
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

    def _mlp(self, layer: nn.Module, h: Tensor) -> Tensor:
        return h + layer.mlp(layer.post_attention_layernorm(h))

    @torch.inference_mode()
    def prefill(self, ids: Tensor, slot: int, cache: KVCache) -> Tensor:
        """Run prompt `ids` [T] into `slot`; return the last position's logits [V]."""
        t = ids.shape[0]
        cache.reserve(t)
        h = self.embed(ids[None])
        cos, sin = self.rotary(h, torch.arange(t, device=ids.device)[None])
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            q, k, v = self._qkv(attn, layer.input_layernorm(h), cos, sin)
            cache.keys[i][slot, :, :t] = k[0]
            cache.values[i][slot, :, :t] = v[0]
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            h = h + attn.o_proj(out.transpose(1, 2).reshape(1, t, -1))
            h = self._mlp(layer, h)
        return self.lm_head(self.norm(h[:, -1]))[0]

    @torch.inference_mode()
    def decode(self, tokens: Tensor, lengths: Tensor, cache: KVCache) -> Tensor:
        """One step for slots 0..B-1: `tokens` [B] go at positions `lengths` [B].

        Returns logits [B, V]. The caller has reserved capacity for max(lengths) + 1.
        """
        b = tokens.shape[0]
        s = self.shape
        span = int(lengths.max()) + 1
        rows = torch.arange(b, device=tokens.device)
        mask = (torch.arange(span, device=tokens.device)[None] <= lengths[:, None])[:, None, None]
        h = self.embed(tokens[:, None])
        cos, sin = self.rotary(h, lengths[:, None])
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            q, k, v = self._qkv(attn, layer.input_layernorm(h), cos, sin)
            keys, values = cache.keys[i], cache.values[i]
            keys[rows, :, lengths] = k[:, :, 0]
            values[rows, :, lengths] = v[:, :, 0]
            # GQA without repeating KV: each kv head's query group acts as a short query.
            grouped = q.view(b, s.kv_heads, s.heads // s.kv_heads, s.head_dim)
            out = F.scaled_dot_product_attention(
                grouped, keys[:b, :, :span], values[:b, :, :span], attn_mask=mask
            )
            h = h + attn.o_proj(out.reshape(b, 1, -1))
            h = self._mlp(layer, h)
        return self.lm_head(self.norm(h[:, 0]))
