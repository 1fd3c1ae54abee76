"""One arm of `fsdp_memory.py` in this process (and the ranks it spawns): build, step, measure.

    python benchmarks/_memory_rank.py SPEC_JSON

SPEC_JSON: {"arm", "shape", "dtype", "steps", "tokens", "device", "autocast", "world"}.
Prints one JSON line. On CUDA the peak is also the allocator's (`max_memory_allocated`,
reset at each step's start), which is what a GPU must hold. A separate script so that
the driver imports neither torch nor the trainer (the box is shared: every import is CPU
time taken from someone).
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch.distributed.tensor import DTensor
from transformers import LlamaConfig, LlamaForCausalLM

from _floor import cpu_flags
from _machine import machine
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.trainer import Trainer
from shadowrl.types import Segment, Trajectory

PEAKS = "FSDP_MEMORY_PEAKS"  # the directory where ranks 1..N-1 leave their figures
MB = 2**20


def _vm(field: str) -> int:
    """`VmRSS` / `VmHWM` of this process, in bytes."""
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def _settle_and_reset_peak() -> int:
    """Give freed heap back to the OS, restart the high-water mark there; the RSS then."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS (Linux >= 4.0)
    return _vm("VmRSS")


def _local_bytes(tensors: Any) -> int:
    return sum(
        int((t.to_local() if isinstance(t, DTensor) else t).nbytes)
        for t in tensors
        if isinstance(t, torch.Tensor)
    )


class ConstantLlama(LlamaForCausalLM):
    """A Llama in `config.dtype` whose weights are constants (0.001; norms 1), not random:
    the values change no byte of memory, and drawing ~1B random numbers on every rank
    would cost minutes of a shared CPU. Rank 0 passes its class to the ranks it spawns."""

    def __init__(self, config: LlamaConfig) -> None:
        from transformers.initialization import no_init_weights

        default, dtype = torch.get_default_dtype(), config.dtype
        assert isinstance(dtype, torch.dtype), "LlamaConfig(dtype=...) turns a name into a dtype"
        torch.set_default_dtype(dtype)
        try:
            with no_init_weights():
                super().__init__(config)
        finally:
            torch.set_default_dtype(default)
        with torch.no_grad():
            for name, p in self.named_parameters():
                p.fill_(1.0 if "norm" in name else 1e-3)


class MeasuredTrainer(Trainer):
    """The trainer, recording each step's peak RSS. Rank 0 passes its class to the ranks
    it spawns, so they measure themselves too and leave their figures in `$PEAKS`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.built_peak = _vm("VmHWM")  # building the full model before sharding it
        self.steps: list[dict[str, float]] = []

    def step(self, batch: Any) -> dict[str, float]:
        held = _settle_and_reset_peak()
        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            held_cuda = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        out = super().step(batch)
        if cuda:
            torch.cuda.synchronize()
        took = time.perf_counter() - t0
        fig = {"rss_at_start": held, "peak": _vm("VmHWM"), "step_s": took}
        if cuda:
            fig |= {"cuda_at_start_mb": held_cuda / MB,
                    "cuda_peak_mb": torch.cuda.max_memory_allocated() / MB}  # fmt: skip
        self.steps.append(fig)
        if self.ranks is not None and self.ranks.rank > 0:
            path = Path(os.environ[PEAKS]) / f"rank{self.ranks.rank}.json"
            path.write_text(json.dumps(self.figures()))
        return out

    def figures(self) -> dict[str, Any]:
        moments = [v for st in self.optimizer.state.values() for v in st.values()]
        return {
            "built_peak": self.built_peak,
            "steps": self.steps,
            "state_mb": _local_bytes([*self.model.parameters(), *moments]) / MB,
            "grad_mb": _local_bytes(self.params) / MB,  # a gradient per trainable parameter
            "trainable_params": sum(p.numel() for p in self.params),
        }


def _batch(vocab: int, tokens: int) -> list[list[Trajectory]]:
    """2 groups of 2 trajectories of `tokens` tokens, the first quarter prompt."""

    def traj(reward: float, seed: int) -> Trajectory:
        ids = torch.randint(1, vocab, (tokens,), generator=torch.Generator().manual_seed(seed))
        n, p = len(ids), len(ids) // 4
        seg = Segment(tuple(ids.tolist()), (False,) * p + (True,) * (n - p),
                      (0.0,) * n, (-1,) * p + (0,) * (n - p))  # fmt: skip
        return Trajectory("t", (), (), (seg,), "submitted", reward=reward)

    return [[traj(1.0, 2 * g), traj(0.0, 2 * g + 1)] for g in range(2)]


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """One arm (`spec["arm"]`) on `spec["world"]` ranks (FSDP only), measured."""
    arm, shape, dtype, steps, tokens = (
        spec[k] for k in ("arm", "shape", "dtype", "steps", "tokens")
    )
    baseline = _vm("VmRSS")  # imports done, no model yet
    world = spec["world"] if arm == "fsdp" else 1
    cfg = TrainConfig.model_validate({
        "world_size": world, "parallel": "fsdp" if arm == "fsdp" else "replicate",
        "dtype": dtype, "autocast": spec["autocast"], "lora": {"enabled": arm == "lora"},
        "batch": {"microbatch_tokens": 2 * tokens},  # 2 microbatches: one per FSDP rank
    })  # fmt: skip
    torch.manual_seed(0)
    config = LlamaConfig(**shape, tie_word_embeddings=False, dtype=dtype)
    model = ConstantLlama(config).to(spec["device"])
    params = sum(p.numel() for p in model.parameters())
    with tempfile.TemporaryDirectory() as peaks:
        os.environ[PEAKS] = peaks
        trainer = MeasuredTrainer(model, cfg)
        del model  # the trainer holds it (sharded under FSDP)
        try:
            batch = _batch(shape["vocab_size"], tokens)
            metrics = [trainer.train_groups(batch) for _ in range(steps)]
            ranks = [trainer.figures()]
        finally:
            trainer.close()
        ranks += [json.loads((Path(peaks) / f"rank{r}.json").read_text()) for r in range(1, world)]
    for r in ranks:  # rank 1 imports what rank 0 does: rank 0's baseline stands for both
        r["built_peak_mb"] = (r.pop("built_peak") - baseline) / MB
        for s in r["steps"]:
            s["rss_at_start_mb"] = (s.pop("rss_at_start") - baseline) / MB
            s["peak_mb"] = (s.pop("peak") - baseline) / MB
    cuda = [s["cuda_peak_mb"] for r in ranks for s in r["steps"] if "cuda_peak_mb" in s]
    return {
        "arm": arm,
        "world_size": world,
        "device": spec["device"],
        "autocast": spec["autocast"],
        "params": params,
        "baseline_mb": baseline / MB,
        "ranks": ranks,
        # a GPU's figure is its allocator's peak; a CPU's, the resident set's
        "peak_mb": max(cuda) if cuda else max(s["peak_mb"] for r in ranks for s in r["steps"]),
        "microbatches": metrics[-1]["microbatches"],
        "skipped": [m["skipped"] for m in metrics],  # 1.0: no AdamW step, no moments held
        "machine": machine("transformers") | cpu_flags() | _gpu(spec["device"]),
    }


def _gpu(device: str) -> dict[str, Any]:
    if device != "cuda":
        return {}
    props = torch.cuda.get_device_properties(0)
    return {"gpu": props.name, "gpu_memory_mb": props.total_memory / MB,
            "cuda": torch.version.cuda}  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1]))))
