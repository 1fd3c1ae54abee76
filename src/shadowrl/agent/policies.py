"""Two simple `Policy` implementations: a scripted one for tests and a plain HF one.

`ScriptedPolicy` makes the whole loop deterministic and model-free (cf. mini-swe-agent's
`DeterministicModel`): it "generates" the tokenisation of a fixed reply. `HFPolicy`
runs `transformers.generate` one request at a time and reports per-token logprobs of
the distribution each token was actually sampled from. The fast batched engine
(`shadowrl.inference.engine.Engine`) implements the same protocol.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any

from shadowrl.types import FinishReason, Generation, SamplingParams


def _end_token(tokenizer: Any, sampling: SamplingParams) -> int:
    """The end-of-turn token the loop asked for, else the tokenizer's EOS."""
    return sampling.stop_token_ids[0] if sampling.stop_token_ids else int(tokenizer.eos_token_id)


class ScriptedPolicy:
    """Replies with fixed texts, in order, or with `replies(decoded_prompt)`.

    Each reply is tokenised and followed by the end-of-turn token; logprobs are 0.0.
    A reply longer than `max_new_tokens` is cut there (finish_reason "length").
    """

    def __init__(
        self,
        tokenizer: Any,
        replies: Sequence[str] | Callable[[str], str],
        version: int = 0,
    ):
        self.tokenizer = tokenizer
        self.replies = replies
        self.version = version
        self.calls = 0

    def _next_reply(self, prompt_ids: Sequence[int]) -> str:
        if callable(self.replies):
            return self.replies(self.tokenizer.decode(list(prompt_ids)))
        if self.calls >= len(self.replies):
            raise RuntimeError(f"ScriptedPolicy ran out of replies after {len(self.replies)}")
        return self.replies[self.calls]

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        reply = self._next_reply(prompt_ids)
        self.calls += 1
        ids = [
            *self.tokenizer.encode(reply, add_special_tokens=False),
            _end_token(self.tokenizer, sampling),
        ]
        finish: FinishReason = "stop"
        if len(ids) > sampling.max_new_tokens:
            ids, finish = ids[: sampling.max_new_tokens], "length"
        return Generation(tuple(ids), (0.0,) * len(ids), (self.version,) * len(ids), finish)


class HFPolicy:
    """`model.generate` behind the `Policy` protocol; one request at a time."""

    def __init__(self, model: Any, tokenizer: Any, version: int = 0):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.version = version
        self._lock = threading.Lock()  # generate() is not re-entrant; threads queue here

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        return await asyncio.to_thread(self._generate, list(prompt_ids), sampling)

    def _generate(self, prompt_ids: list[int], sampling: SamplingParams) -> Generation:
        import torch
        from transformers import GenerationConfig

        stops = list(sampling.stop_token_ids) or [int(self.tokenizer.eos_token_id)]
        greedy = sampling.temperature == 0
        gen_config = GenerationConfig(
            max_new_tokens=sampling.max_new_tokens,
            do_sample=not greedy,
            temperature=None if greedy else sampling.temperature,
            top_p=None if greedy else sampling.top_p,
            top_k=None if greedy else sampling.top_k,  # 0 = off (transformers' default is 50)
            eos_token_id=stops,
            pad_token_id=stops[0],
            stop_strings=list(sampling.stop) or None,
            output_scores=True,  # the processed logits each token was drawn from
            return_dict_in_generate=True,
        )
        device = next(self.model.parameters()).device
        with self._lock, torch.no_grad():
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            out = self.model.generate(
                input_ids=torch.tensor([prompt_ids], device=device),
                attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long, device=device),
                generation_config=gen_config,
                tokenizer=self.tokenizer if sampling.stop else None,
            )
        new = out.sequences[0, len(prompt_ids) :].tolist()
        scores = torch.stack(out.scores)[:, 0].float().log_softmax(-1)  # [new, vocab]
        logprobs = scores[torch.arange(len(new)), torch.tensor(new)].tolist()
        finish: FinishReason = (
            "length" if len(new) >= sampling.max_new_tokens and new[-1] not in stops else "stop"
        )
        return Generation(tuple(new), tuple(logprobs), (self.version,) * len(new), finish)
