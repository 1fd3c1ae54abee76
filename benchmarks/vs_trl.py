"""shadowrl vs TRL: the wall clock of one GRPO step, same model, prompts, rewards and machine.

Both sides do the same work per step, measured in one process one after the other:

* task — "What is a + b? Answer with just the number.", rendered with the model's
  chat template; reward 1.0 if the last integer in the completion is a + b, else 0.0.
* model — SmolLM2-135M-Instruct through `shadowrl.models.load_model` (or `--model tiny`,
  the 2-layer random Llama, or `--model smollm2-random`, SmolLM2-135M's shape with random
  weights for hosts without the bundled GGUF), float32 weights on `--device` (CPU by
  default, same torch intra-op thread count).
* batch — `prompts` prompts × `generations` completions each (G of GRPO), at most
  `max_completion_length` new tokens, temperature 1.0, top-p 1.0, top-k off, stop at EOS.
* objective — advantage = reward − group mean (no std scaling), no KL term, loss summed
  over tokens and divided by the constant completions × max_completion_length (Dr. GRPO),
  one AdamW step (lr, betas (0.9, 0.99), no weight decay), grad-norm clip 1.0, each sample
  used once.

shadowrl step = `Engine.generate_batch` (continuous batching, one prefill per group
prompt) + `Trainer.train_groups` + weight sync into the engine's separate copy of the
model (`--sync direct`: `Engine.update_weights` with the trainer's state, the in-process
path; `--sync store`: through the delta-compressed `WeightStore` as the orchestrator does).

TRL step = one `GRPOTrainer` optimizer step with `loss_type="dr_grpo"`,
`scale_rewards="none"`, `beta=0.0`, `num_iterations=1`, `gradient_accumulation_steps=1`
(so no extra old-logprob forward), TRL's own transformers `generate` path (no vLLM on
a CPU; none is installed on our GPU host either), timed by a callback from
`on_step_begin` to `on_step_end`. On a GPU, `--trl-bf16` gives TRL its usual mixed
precision (bf16 autocast over the fp32 weights) for generation and training alike.

The two alternate step by step (a TRL step, then a shadowrl step, ...) so both see the
same background load on a shared machine. `warmup` steps of each are run first and not
counted; the median of the next `steps` is reported.

With `--engine-dtype bfloat16` shadowrl rolls out on a bf16 copy of the weights while
its trainer keeps fp32 masters (what RL stacks do with vLLM); the importance ratio absorbs
the logprob gap. TRL without vLLM has no such split: it generates with its training model.
`--train-autocast bfloat16` runs shadowrl's forward and backward under bf16 autocast;
`--trl-bf16 true` gives TRL the same (transformers' autocast, on a CPU too), so compare
mixed precision with both on.

    .venv/bin/python benchmarks/vs_trl.py [--quick] [--model tiny] [--steps 3] [--sync store]
        [--engine-dtype bfloat16] [--engine-weights int8] [--engine-cpu-decode native]
        [--engine-kv-dtype bfloat16] [--train-autocast bfloat16] [--trl-bf16 true]
    python benchmarks/vs_trl.py --device cuda --model smollm2-random --tokenizer DIR \
        --engine-dtype bfloat16 --trl-bf16 true --prompts 8 --generations 8 \
        --max-completion-length 256 --out benchmarks/results/vs_trl_cuda.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from _machine import machine

RESULTS = Path(__file__).parent / "results" / "vs_trl.json"
QUICK = {"model": "tiny", "max_completion_length": 16, "steps": 3, "warmup": 1}
# SmolLM2-135M's geometry (its config.json), for `--model smollm2-random`.
SMOLLM2_SHAPE = {
    "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
    "num_attention_heads": 9, "num_key_value_heads": 3, "max_position_embeddings": 8192,
    "initializer_range": 0.02, "rms_norm_eps": 1e-5,
}  # fmt: skip


class Settings(BaseModel):
    """What both frameworks share; written into the results JSON."""

    model: str = Field(
        "smollm2",
        description="'smollm2' (bundled SmolLM2-135M), 'smollm2-random' (its shape, random "
        "weights) or 'tiny'.",
    )
    tokenizer: str = Field(
        "smollm2", description="Tokenizer for the random models: 'smollm2' or a directory."
    )
    device: str = Field("cpu", description="'cpu' or 'cuda': where both frameworks run.")
    prompts: int = Field(2, ge=1, description="Distinct prompts per step.")
    generations: int = Field(4, ge=2, description="Completions per prompt (G).")
    max_completion_length: int = Field(32, ge=1, description="New tokens per completion, at most.")
    steps: int = Field(3, ge=1, description="Measured steps per framework.")
    warmup: int = Field(1, ge=0, description="Unmeasured steps run first.")
    lr: float = Field(1e-6, gt=0, description="AdamW learning rate.")
    seed: int = Field(0, description="Seed of prompts, sampling and initialisation.")
    sync: Literal["direct", "store"] = Field(
        "direct", description="shadowrl weight sync: in-process swap or via the WeightStore."
    )
    torch_threads: int = Field(2, ge=1, description="torch intra-op threads (both frameworks).")
    engine_dtype: Literal["float32", "bfloat16"] = Field(
        "float32",
        description="shadowrl engine.dtype: the serving copy's precision (the trainer stays "
        "fp32). TRL generates with its training model either way.",
    )
    engine_weights: Literal["dense", "int8", "fp8"] = Field(
        "dense",
        description="shadowrl engine.weights: int8 (CPU) or fp8 (GPU) Linear layers in the "
        "serving copy; the fp32 trainer's importance ratio corrects the gap (its log-ratio "
        "and clip fraction are reported per step).",
    )
    engine_cpu_decode: Literal["torch", "native"] = Field(
        "torch",
        description="shadowrl engine.cpu_decode: 'native' runs each decoder layer of a CPU "
        "decode step in one C call (float32 engines).",
    )
    engine_kv_dtype: Literal["auto", "bfloat16"] = Field(
        "auto", description="shadowrl engine.kv_dtype: 'bfloat16' stores the KV cache in bf16."
    )
    train_autocast: Literal["none", "bfloat16"] = Field(
        "none",
        description="shadowrl train.autocast: the trainer's forward and backward under bf16 "
        "autocast (fp32 weights and AdamW). Compare with --trl-bf16 true, TRL's own.",
    )
    trl_bf16: bool = Field(
        False,
        description="TRL's bf16 mixed precision (transformers' autocast over fp32 weights; "
        "its GPU default), for its generation and training alike.",
    )


def problems(n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randint(10, 99), rng.randint(10, 99)) for _ in range(n)]


def question(a: int, b: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"What is {a} + {b}? Answer with just the number."}]


def reward(text: str, answer: int) -> float:
    """1.0 iff the last integer in the completion is the answer ("12 + 30 = 42" counts)."""
    found = re.findall(r"-?\d+", text)
    return float(bool(found) and int(found[-1]) == answer)


# ------------------------------------------------------------------------- shadowrl


def shadowrl_steps(s: Settings) -> Generator[dict[str, float]]:
    """warmup + steps RL steps with shadowrl's engine, trainer and weight sync, one per next()."""
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.rl.config import TrainConfig
    from shadowrl.rl.trainer import Trainer
    from shadowrl.types import SamplingParams

    model, tok = build_model(s)
    serving, _ = build_model(s)
    n = s.prompts * s.generations
    trainer = Trainer(
        model,
        TrainConfig.model_validate(
            {"optimizer": {"lr": s.lr, "betas": (0.9, 0.99)},
             "batch": {"max_staleness": 0, "microbatch_tokens": 1 << 20,
                       "token_budget": n * s.max_completion_length},
             "activation_checkpointing": False,  # short rows; TRL does not checkpoint either
             "autocast": s.train_autocast}
        ),
        seed=s.seed,
    )  # fmt: skip
    tasks = problems(s.prompts * (s.warmup + s.steps), s.seed)
    longest = max(len(prompt_ids(tok, a, b)) for a, b in tasks) + s.max_completion_length
    # max_seq_len sized to the workload: on CUDA the KV cache and graph spans follow it.
    config = {"max_batch": n, "dtype": s.engine_dtype, "max_seq_len": longest + 1,
              "weights": s.engine_weights, "cpu_decode": s.engine_cpu_decode,
              "kv_dtype": s.engine_kv_dtype}  # fmt: skip
    engine = Engine(serving, tok, EngineConfig.model_validate(config), seed=s.seed)
    sampling = SamplingParams(
        max_new_tokens=s.max_completion_length, temperature=1.0, top_p=1.0, top_k=0
    )
    sync = weight_sync(s, engine)
    with engine:
        for i in range(s.warmup + s.steps):
            batch = tasks[i * s.prompts : (i + 1) * s.prompts]
            t0 = time.perf_counter()
            prompts = [prompt_ids(tok, a, b) for a, b in batch]
            gens = engine.generate_batch(
                [p for p in prompts for _ in range(s.generations)], sampling
            )
            t1 = time.perf_counter()
            groups = to_groups(tok, batch, prompts, gens, s.generations)
            metrics = train_every_row(trainer, groups)
            t2 = time.perf_counter()
            sync(trainer.state_dict(), trainer.version)
            device_sync()
            t3 = time.perf_counter()
            row = {"step_s": t3 - t0, "generate_s": t1 - t0, "train_s": t2 - t1, "sync_s": t3 - t2,
                   "completion_tokens": float(sum(len(g.token_ids) for g in gens)),
                   "reward": statistics.fmean(t.reward or 0.0 for g in groups for t in g),
                   "loss": metrics["loss"], "clip_frac": metrics["clip_frac"],
                   "rollout_log_ratio_mean": metrics.get("rollout_log_ratio_mean", 0.0),
                   "rollout_log_ratio_max_abs": metrics.get("rollout_log_ratio_max_abs", 0.0)}  # fmt: skip
            progress("shadowrl", i, s, row)
            yield row


def build_model(s: Settings) -> tuple[Any, Any]:
    """(model, tokenizer) in float32 on s.device; random models are seeded identically."""
    import torch

    from shadowrl.models import ModelConfig, load_model, load_tokenizer, random_llama

    if s.model != "smollm2-random":
        return load_model(ModelConfig(path=s.model, device=s.device), seed=s.seed)
    model = random_llama(s.seed, **SMOLLM2_SHAPE)
    torch.nn.Module.to(model, device=s.device)
    return model, load_tokenizer(s.tokenizer)


def device_sync() -> None:
    """Wait for queued GPU work, so a host clock read after it measures it."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def prompt_ids(tok: Any, a: int, b: int) -> list[int]:
    """The chat-templated question as token ids (what TRL renders from the same messages)."""
    enc = tok.apply_chat_template(question(a, b), add_generation_prompt=True, return_dict=True)
    return list(enc["input_ids"])


def to_groups(
    tok: Any,
    batch: Sequence[tuple[int, int]],
    prompts: Sequence[list[int]],
    gens: Sequence[Any],
    g: int,
) -> list[list[Any]]:
    """Completions -> scored trajectories (prompt tokens masked out), one group per prompt."""
    from shadowrl.types import Segment, Trajectory

    groups = []
    for j, ((a, b), prompt) in enumerate(zip(batch, prompts, strict=True)):
        group = []
        for gen in gens[j * g : (j + 1) * g]:
            p, c = len(prompt), len(gen.token_ids)
            seg = Segment(
                (*prompt, *gen.token_ids), (False,) * p + (True,) * c,
                (0.0,) * p + gen.logprobs, (-1,) * p + gen.versions,
            )  # fmt: skip
            text = tok.decode(gen.token_ids, skip_special_tokens=True)
            group.append(
                Trajectory(f"{a}+{b}", (), (), (seg,), "submitted", reward=reward(text, a + b))
            )
        groups.append(group)
    return groups


def train_every_row(trainer: Any, groups: list[list[Any]]) -> dict[str, float]:
    """`Trainer.train_groups`, but zero-advantage rows are trained too (TRL does the same work).

    In production shadowrl skips them (their gradient is exactly zero); counting that
    here would compare no backward pass with TRL's full one whenever a group is flat.
    """
    from shadowrl.rl.batch import build_rl_batch

    cfg = trainer.cfg
    batch = build_rl_batch(
        groups, trainer_version=trainer.version, max_staleness=cfg.batch.max_staleness,
        microbatch_tokens=cfg.batch.microbatch_tokens, token_budget=cfg.batch.token_budget,
        keep_zero_advantage=True, pad_to_multiple=cfg.batch.pad_to_multiple,
    )  # fmt: skip
    return dict(trainer.step(batch))


def weight_sync(s: Settings, engine: Any) -> Any:
    """The trainer -> engine hand-over: a direct in-process swap or via the WeightStore."""
    if s.sync == "direct":
        return engine.update_weights
    from shadowrl.rl.weights import WeightStore

    store = WeightStore(tempfile.mkdtemp(prefix="vs_trl_store_"))

    def via_store(state: Any, version: int) -> None:
        store.publish(state, version)
        engine.update_weights(store.fetch(version), version)

    return via_store


# ------------------------------------------------------------------------------ TRL


def trl_steps(s: Settings, between: Callable[[], None]) -> list[dict[str, float]]:
    """warmup + steps GRPOTrainer optimizer steps, each timed by a callback.

    `between()` runs after each timed step (outside the timer): the shadowrl step, so the
    two alternate and see the same background load on a shared machine.
    """
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    model, tok = build_model(s)
    total = s.warmup + s.steps
    rows = [
        {"prompt": question(a, b), "answer": a + b} for a, b in problems(s.prompts * total, s.seed)
    ]
    out: list[dict[str, float]] = []

    def sum_reward(
        completions: list[list[dict[str, str]]], answer: list[int], **_: Any
    ) -> list[float]:
        return [reward(c[0]["content"], x) for c, x in zip(completions, answer, strict=True)]

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            device_sync()
            row = {"step_s": time.perf_counter() - self.t0}
            out.append(row)
            progress("trl", len(out) - 1, s, row)
            between()

    with tempfile.TemporaryDirectory() as tmp:
        args = GRPOConfig(
            output_dir=tmp, per_device_train_batch_size=s.prompts * s.generations,
            num_generations=s.generations, max_completion_length=s.max_completion_length,
            max_steps=total, learning_rate=s.lr, adam_beta2=0.99, weight_decay=0.0,
            max_grad_norm=1.0, lr_scheduler_type="constant", warmup_steps=0,
            loss_type="dr_grpo", scale_rewards="none", beta=0.0, num_iterations=1,
            gradient_accumulation_steps=1, temperature=1.0, top_p=1.0, top_k=0,
            use_cpu=s.device == "cpu", bf16=s.trl_bf16, fp16=False, seed=s.seed, report_to="none",
            save_strategy="no", logging_steps=total, disable_tqdm=True, log_completions=False,
            dataloader_num_workers=0, gradient_checkpointing=False,
        )  # fmt: skip
        trainer = GRPOTrainer(
            model=model, reward_funcs=cast(Any, sum_reward), args=args, processing_class=tok,
            train_dataset=Dataset.from_list(rows), callbacks=[StepTimer()],
        )  # fmt: skip
        trainer.train()
    return out


# ---------------------------------------------------------------------------- report


def progress(name: str, i: int, s: Settings, row: dict[str, float]) -> None:
    tag = "warm-up" if i < s.warmup else f"step {i - s.warmup + 1}/{s.steps}"
    parts = "  ".join(f"{k} {v:.2f}" for k, v in row.items())
    print(f"  [{name}] {tag}: {parts}", flush=True)


def median_of(rows: Sequence[dict[str, float]], key: str, skip: int) -> float:
    return statistics.median(r[key] for r in rows[skip:])


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"Small settings: {QUICK}.")
    for name, field in Settings.model_fields.items():
        kind = type(field.default)
        ap.add_argument(f"--{name.replace('_', '-')}", default=None, help=field.description,
                        type=(lambda v: v.lower() in ("1", "true", "yes")) if kind is bool else kind)  # fmt: skip
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    given = {k: v for k in Settings.model_fields if (v := getattr(args, k)) is not None}
    s = Settings.model_validate((QUICK if args.quick else {}) | given)

    import torch

    torch.set_num_threads(s.torch_threads)
    print(f"settings: {s.model_dump()}", flush=True)
    ours: list[dict[str, float]] = []
    shadowrl = shadowrl_steps(s)
    theirs = trl_steps(s, lambda: ours.append(next(shadowrl)))
    shadowrl.close()  # stops the engine
    a, b = median_of(ours, "step_s", s.warmup), median_of(theirs, "step_s", s.warmup)
    parts = {k: median_of(ours, k, s.warmup) for k in ("generate_s", "train_s", "sync_s")}
    print(f"shadowrl median step {a:.2f}s ({', '.join(f'{k} {v:.2f}s' for k, v in parts.items())})")
    print(f"TRL      median step {b:.2f}s")
    result = {
        "settings": s.model_dump(), "machine": machine("transformers", "trl"), "shadowrl_step_s": a, "trl_step_s": b,
        "speedup": b / a, "shadowrl_parts_s": parts, "shadowrl_steps": ours, "trl_steps": theirs,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    print(f"shadowrl_step_s={a:.3f} trl_step_s={b:.3f} speedup={b / a:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
