"""A `Policy` served by any OpenAI-compatible server: ours, vLLM or SGLang.

Rollouts must be token-exact: the trainer learns from the ids the model produced,
never from a re-tokenisation of its text (which can split differently). So the
prompt goes out as token ids on `/v1/completions` (vLLM and SGLang accept a list of
ints as `prompt`), and the ids come back from, in order of preference:

1. `choices[0].token_ids`: `shadowrl serve` always sends it, vLLM with `return_token_ids`;
2. logprob tokens spelled `token_id:N` (vLLM's `return_tokens_as_token_ids`);
3. re-tokenising the text, with a warning, since only this one can be wrong.

Per-token policy versions come from our `policy_versions` field when the server
sends it, else the constant `version` given here (a vLLM server knows no versions).
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections.abc import Sequence
from typing import Any

import httpx

from shadowrl.types import FinishReason, Generation, SamplingParams

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class RemoteError(RuntimeError):
    """The server refused or failed a request (after retries, if it was retryable)."""


class RemotePolicy:
    """`Policy` over HTTP; safe to call concurrently (one pooled client per event loop)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        tokenizer: Any = None,
        *,
        version: int = 0,
        timeout_s: float = 600.0,
        max_retries: int = 3,
        max_connections: int = 256,
    ) -> None:
        base = base_url.rstrip("/")  # like `openai`'s base_url; "/v1" is added if missing
        self.url = f"{base if base.endswith('/v1') else base + '/v1'}/completions"
        self.model, self.tokenizer, self.version = model, tokenizer, version
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
        self.limits = httpx.Limits(max_connections=max_connections)
        self.max_retries = max_retries
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def _client(self) -> httpx.AsyncClient:
        """An httpx pool is bound to the loop that opened it, so keep one per loop."""
        loop = asyncio.get_running_loop()
        if loop not in self._clients:
            self._clients[loop] = httpx.AsyncClient(
                timeout=self.timeout, limits=self.limits, headers=self.headers
            )
        return self._clients[loop]

    async def aclose(self) -> None:
        """Close the current loop's connection pool."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        body = request_body(self.model, prompt_ids, sampling)
        choice = (await self._post(body))["choices"][0]
        return self.to_generation(choice)

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST with exponential back-off on connection errors, 429 and 5xx."""
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                resp = await self._client().post(self.url, json=body)
            except httpx.TransportError as e:
                if last:
                    raise RemoteError(f"{self.url}: {e!r}") from e
            else:
                if resp.status_code == 200:
                    return resp.json()
                if last or resp.status_code not in RETRY_STATUS:
                    raise RemoteError(f"{self.url}: HTTP {resp.status_code}: {resp.text[:500]}")
            await asyncio.sleep(min(0.5 * 2**attempt, 8.0))
        raise AssertionError("unreachable")

    def to_generation(self, choice: dict[str, Any]) -> Generation:
        """One completion choice -> ids, logprobs and versions of equal length."""
        ids = self.token_ids(choice)
        lps = (choice.get("logprobs") or {}).get("token_logprobs")
        if lps is None or len(lps) != len(ids):
            log.warning("server sent no per-token logprobs matching its tokens; using NaN")
            lps = [math.nan] * len(ids)
        versions = choice.get("policy_versions") or [self.version] * len(ids)
        reason = choice.get("finish_reason")
        finish: FinishReason = reason if reason in ("stop", "length", "abort") else "stop"
        return Generation(
            tuple(ids),
            tuple(math.nan if x is None else float(x) for x in lps),
            tuple(versions),
            finish,
        )

    def token_ids(self, choice: dict[str, Any]) -> list[int]:
        if choice.get("token_ids") is not None:
            return [int(t) for t in choice["token_ids"]]
        tokens = (choice.get("logprobs") or {}).get("tokens") or []
        if tokens and all(str(t).startswith("token_id:") for t in tokens):
            return [int(str(t).removeprefix("token_id:")) for t in tokens]
        if self.tokenizer is None:
            raise RemoteError("server returned no token ids and no tokenizer was given")
        log.warning("server returned no token ids; re-tokenising text (may not be exact)")
        return list(self.tokenizer.encode(choice.get("text", ""), add_special_tokens=False))


def request_body(model: str, prompt_ids: Sequence[int], sp: SamplingParams) -> dict[str, Any]:
    """A `/v1/completions` body; the extra fields are vLLM's and ignored where unknown."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": [int(t) for t in prompt_ids],
        "max_tokens": sp.max_new_tokens,
        "temperature": sp.temperature,
        "top_p": sp.top_p,
        "logprobs": 0,
        "return_tokens_as_token_ids": True,
        "return_token_ids": True,
        "skip_special_tokens": False,
    }
    if sp.top_k > 0:
        body["top_k"] = sp.top_k
    if sp.stop:
        body["stop"] = list(sp.stop)
    if sp.stop_token_ids:
        body["stop_token_ids"] = list(sp.stop_token_ids)
    if sp.seed is not None:
        body["seed"] = sp.seed
    return body
