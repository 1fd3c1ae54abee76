"""Rendering through the model's own chat template, and token-exact continuation."""

from __future__ import annotations

import copy
from typing import Any

from shadowrl.agent.prompt import (
    Renderer,
    format_tool_calls,
    render_prompt,
    template_supports_tools,
)
from shadowrl.agent.tools import ToolSet
from shadowrl.types import Message, ToolCall

SCHEMAS = ToolSet.from_names(["read_file", "submit"]).schemas()
CONV = [Message("system", "Be brief."), Message("user", "Fix it.")]

# A Qwen2.5-like template that renders tools and tool calls itself.
NATIVE = (
    "{% if tools %}<|im_start|>system\nTOOLS:{% for t in tools %} {{ t.function.name }}{% endfor %}"
    "<|im_end|>\n{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<call>{{ c.function.name }}</call>{% endfor %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_smollm2_template_gets_hermes_tools_in_the_system_message(tokenizer: Any) -> None:
    assert not template_supports_tools(tokenizer)
    text = tokenizer.decode(render_prompt(tokenizer, CONV, SCHEMAS))
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n")
    assert '<tools>\n{"name":"read_file",' in text and '{"name":"submit",' in text
    assert "<tool_call>" in text and text.endswith(
        "<|im_start|>user\nFix it.<|im_end|>\n<|im_start|>assistant\n"
    )


def test_tool_results_render_as_one_tool_response_turn(tokenizer: Any) -> None:
    r = Renderer(tokenizer, SCHEMAS)
    calls = (ToolCall("a", "read_file", {"path": "x"}), ToolCall("b", "submit", {}))
    conv = [*CONV, Message("assistant", "ok", calls)]
    results = [Message("tool", "one", tool_call_id="a"), Message("tool", "two", tool_call_id="b")]
    text = r.text([*conv, *results], add_generation_prompt=True)
    assert format_tool_calls("ok", calls) in text
    assert text.endswith(
        "<|im_start|>user\n<tool_response>\none\n</tool_response>\n<tool_response>\ntwo\n"
        "</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )


def test_native_tool_template_is_used_as_is(tokenizer: Any) -> None:
    tok = copy.deepcopy(tokenizer)
    tok.chat_template = NATIVE
    r = Renderer(tok, SCHEMAS)
    assert r.native_tools
    conv = [*CONV, Message("assistant", "", (ToolCall("a", "submit", {}),))]
    text = r.text(conv, add_generation_prompt=False)
    assert text.startswith("<|im_start|>system\nTOOLS: read_file submit<|im_end|>\n")
    assert "<call>submit</call>" in text and "<tools>" not in text


def test_continuation_closes_the_turn_only_where_the_model_did_not(tokenizer: Any) -> None:
    r = Renderer(tokenizer, SCHEMAS)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert r.turn_end == "<|im_end|>\n" and r.stop_token_ids[0] == end
    conv = [*CONV, Message("assistant", "hi")]
    new = [Message("user", "more")]
    stopped = r.continuation_ids(conv, new, [*tokenizer.encode("hi"), end])
    cut = r.continuation_ids(conv, new, tokenizer.encode("hi"))
    assert (
        tokenizer.decode(stopped) == "\n<|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n"
    )
    assert cut == [end, *stopped]
