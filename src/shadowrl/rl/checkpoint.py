"""Crash-safe checkpoints: a Hugging Face directory plus optimizer and trainer state.

A checkpoint is `root/step_XXXXXXXX/` holding `config.json` + `model.safetensors`
(so `transformers.from_pretrained` and vLLM load it as is), `optimizer.pt`,
`rng.pt` and `trainer_state.json`. It is written into a hidden temporary directory,
fsynced, then renamed into place: a rename is atomic, so after a kill -9 the newest
`step_*` directory is always complete and at most the step in progress is lost.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from shadowrl.atomic import commit_dir

PREFIX = "step_"
TMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class TrainerState:
    """The counters that must survive a restart."""

    step: int
    version: int


def _torch_rng() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_torch_rng(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _python_rng_json() -> list[Any]:
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def _set_python_rng(state: list[Any]) -> None:
    random.setstate((state[0], tuple(state[1]), state[2]))


def checkpoint_path(root: str | Path, step: int) -> Path:
    """Where `save_checkpoint` puts step `step` under `root`."""
    return Path(root) / f"{PREFIX}{step:08d}"


def save_checkpoint(
    root: str | Path,
    model: Any,
    optimizer: torch.optim.Optimizer,
    state: TrainerState,
    *,
    tokenizer: Any = None,
    keep: int = 2,
    extra: Callable[[Path], Any] | None = None,
    weights: Mapping[str, Any] | None = None,
) -> Path:
    """Write checkpoint `state.step` atomically; keep only the newest `keep`. Returns its path.

    `extra(directory)` writes more files into it (LoRA adapters, a companion's: `companion.py`) before it
    is committed; `weights`, if given, are saved instead of the model's own (merged LoRA)."""
    tmp = begin(root, state.step)
    model.save_pretrained(tmp, state_dict=None if weights is None else dict(weights))
    if tokenizer is not None:
        tokenizer.save_pretrained(tmp)
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    write_counters(tmp, state)
    if extra is not None:
        extra(tmp)
    return commit(root, state.step, keep)


def tmp_path(root: str | Path, step: int) -> Path:
    """Where step `step`'s checkpoint is written before `commit` renames it into place."""
    return Path(root) / f"{TMP_PREFIX}{checkpoint_path(root, step).name}"


def begin(root: str | Path, step: int) -> Path:
    """A fresh `tmp_path` directory that `commit` later renames to step `step`'s checkpoint."""
    tmp = tmp_path(root, step)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    return tmp


def write_counters(tmp: Path, state: TrainerState) -> None:
    """The RNG states and counters, beside the weights."""
    torch.save(_torch_rng(), tmp / "rng.pt")
    blob = {**asdict(state), "python_rng": _python_rng_json()}
    (tmp / "trainer_state.json").write_text(json.dumps(blob))


def commit(root: str | Path, step: int, keep: int) -> Path:
    """fsync `begin`'s directory, rename it into place and prune to the newest `keep`."""
    final = commit_dir(tmp_path(root, step), checkpoint_path(root, step))  # a re-save replaces
    _prune(Path(root), keep)
    return final


def latest_checkpoint(root: str | Path) -> Path | None:
    """The newest complete checkpoint under `root`, or None."""
    root = Path(root)
    if not root.is_dir():
        return None
    done = sorted(p for p in root.iterdir() if p.name.startswith(PREFIX) and p.is_dir())
    return done[-1] if done else None


def load_training_state(ckpt: str | Path, optimizer: torch.optim.Optimizer) -> TrainerState:
    """Restore optimizer and RNG in place; return the saved counters (weights load separately)."""
    optimizer.load_state_dict(torch.load(Path(ckpt) / "optimizer.pt", weights_only=True))
    return load_counters(ckpt)


def load_counters(ckpt: str | Path) -> TrainerState:
    """Restore the RNG states in place; return the saved counters."""
    ckpt = Path(ckpt)
    _set_torch_rng(torch.load(ckpt / "rng.pt", weights_only=True))
    blob = json.loads((ckpt / "trainer_state.json").read_text())
    _set_python_rng(blob.pop("python_rng"))
    return TrainerState(**blob)


def _prune(root: Path, keep: int) -> None:
    done = sorted(p for p in root.iterdir() if p.name.startswith(PREFIX))
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    for tmp in root.glob(f"{TMP_PREFIX}*"):
        shutil.rmtree(tmp, ignore_errors=True)
