"""Conversation → token ids through the model's own chat template, incrementally.

Training must see exactly the ids the model saw, so an episode's token sequence is
never re-rendered from text. The first prompt is rendered once; after that the
model's generated ids are appended verbatim and every new batch of messages is
appended as the tokenisation of the *template text delta*: render(conv + new)
minus render(conv), plus whatever the template puts after an assistant turn that
the model did not generate itself (e.g. the "\n" after `<|im_end|>`).

Templates that know about tools (Qwen2.5, Llama 3.1, ...) get the schemas through
`tools=`. Templates that ignore them (SmolLM2's plain ChatML) get the same schemas
injected Hermes-style into the system message, assistant tool calls serialised as
`<tool_call>` tags and tool results as `<tool_response>` user turns. Either way the
model is asked for Hermes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from shadowrl.types import Message, ToolCall

# A transformers tokenizer (PreTrainedTokenizerBase); typed loosely because its
# `apply_chat_template` signature is too wide to restate as a Protocol.
Tokenizer = Any

_PROBE_TOOL = "zz_probe_tool_name"
_PROBE_TEXT = "zz_probe_assistant_text"

HERMES_INSTRUCTIONS = (
    "\n\n# Tools\nYou may call these tools:\n<tools>\n{schemas}\n</tools>\n"
    'Call one or more per reply as <tool_call>{{"name": <name>, "arguments": {{...}}}}'
    "</tool_call>. Results come back in <tool_response> tags."
)


def format_tool_calls(content: str, calls: Sequence[ToolCall]) -> str:
    """The canonical Hermes text of an assistant turn (what a template-less model should say)."""
    tags = [
        "<tool_call>\n" + json.dumps({"name": c.name, "arguments": c.arguments}) + "\n</tool_call>"
        for c in calls
    ]
    return "\n".join([content, *tags] if content else tags)


def _schema_line(schema: dict[str, Any]) -> str:
    fn = schema.get("function", schema)
    compact = {"name": fn["name"], "description": fn.get("description", "")}
    params = dict(fn.get("parameters") or {"type": "object", "properties": {}})
    if not params.get("required"):
        params.pop("required", None)
    compact["parameters"] = params
    return json.dumps(compact, separators=(",", ":"))


def template_supports_tools(tokenizer: Tokenizer) -> bool:
    """Whether the chat template renders `tools=` (probed, not guessed from the name)."""
    probe = {
        "type": "function",
        "function": {"name": _PROBE_TOOL, "description": "", "parameters": {}},
    }
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}], tools=[probe], tokenize=False
    )
    return _PROBE_TOOL in text


class Renderer:
    """Renders one conversation with one tool set; cheap to build, holds no state."""

    def __init__(self, tokenizer: Tokenizer, tools: Sequence[dict[str, Any]] | None = None):
        self.tokenizer = tokenizer
        self.tools = list(tools or [])
        self.native_tools = bool(self.tools) and template_supports_tools(tokenizer)
        self.turn_end = self._assistant_turn_end()
        self.stop_token_ids = self._stop_token_ids()

    # -- text -------------------------------------------------------------------------

    def text(self, messages: Sequence[Message], add_generation_prompt: bool) -> str:
        """The chat template's text for `messages`."""
        dicts = self._native(messages) if self.native_tools else self._hermes(messages)
        return self.tokenizer.apply_chat_template(
            dicts,
            tools=self.tools if self.native_tools else None,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
        )

    def _native(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        return [m.to_openai() for m in messages]

    def _hermes(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in messages:
            if m.role == "tool":
                block = f"<tool_response>\n{m.content}\n</tool_response>"
                if out and out[-1].get("tool_responses"):  # one user turn per batch of results
                    out[-1]["content"] += "\n" + block
                else:
                    out.append({"role": "user", "content": block, "tool_responses": True})
            elif m.role == "assistant":
                out.append(
                    {"role": "assistant", "content": format_tool_calls(m.content, m.tool_calls)}
                )
            else:
                out.append({"role": m.role, "content": m.content})
        if self.tools:
            schemas = "\n".join(_schema_line(t) for t in self.tools)
            extra = HERMES_INSTRUCTIONS.format(schemas=schemas)
            if out and out[0]["role"] == "system":
                out[0] = {"role": "system", "content": out[0]["content"] + extra}
            else:
                out.insert(0, {"role": "system", "content": extra.lstrip()})
        return [{"role": d["role"], "content": d["content"]} for d in out]

    # -- ids --------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Template text → ids; special tokens in the text are already spelled out."""
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        """Ids of a fresh conversation, ending with the assistant generation prompt."""
        return self.encode(self.text(messages, add_generation_prompt=True))

    def continuation_ids(
        self, conv: Sequence[Message], new: Sequence[Message], generated: Sequence[int]
    ) -> list[int]:
        """Ids to append after the model generated `generated` (the last turn of `conv`).

        They close the assistant turn where the model did not (length cut-off), then
        hold `new` and the next generation prompt, exactly as the template renders them.
        """
        before = self.text(conv, add_generation_prompt=False)
        after = self.text([*conv, *new], add_generation_prompt=True)
        if not after.startswith(before):
            raise ValueError("chat template is not prefix-stable: history renders differently")
        return self.encode(self._unclosed_end(generated) + after[len(before) :])

    def _unclosed_end(self, generated: Sequence[int]) -> str:
        """The part of the template's assistant-turn ending that the model did not produce."""
        if generated and generated[-1] in self.stop_token_ids:
            stop_text = self.tokenizer.decode([generated[-1]])
            if self.turn_end.startswith(stop_text):
                return self.turn_end[len(stop_text) :]
        return self.turn_end

    def _assistant_turn_end(self) -> str:
        """What the template writes after an assistant message's content (e.g. '<|im_end|>\\n')."""
        probe = [Message("user", "x"), Message("assistant", _PROBE_TEXT)]
        text = self.text(probe, add_generation_prompt=False)
        return text[text.rindex(_PROBE_TEXT) + len(_PROBE_TEXT) :]

    def _stop_token_ids(self) -> tuple[int, ...]:
        """End-of-turn token first (policies append it), then the tokenizer's EOS."""
        ids: list[int] = []
        end = self.encode(self.turn_end)
        if end and end[0] in set(self.tokenizer.all_special_ids):
            ids.append(end[0])
        eos = self.tokenizer.eos_token_id
        if eos is not None and eos not in ids:
            ids.append(eos)
        return tuple(ids)


def render_prompt(
    tokenizer: Tokenizer, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None
) -> list[int]:
    """Prompt ids for `messages` with the generation prompt (what the server feeds the engine)."""
    return Renderer(tokenizer, tools).prompt_ids(messages)
