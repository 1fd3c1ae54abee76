"""Training settings (SFT and RL), read by the trainer, the batcher and the orchestrator.

`train:` holds the run's shape (steps, rollout groups, checkpoints, compute) and one
sub-section per thing it configures: `optimizer`, `batch`, `loss`, `weights` (the
weight store), `sft`, `mtp`, `lora` and `branching`; any field is overridable as
`--train.section.key=value`. Keys of the flat section before it was split still load,
with a warning naming the new key (`commands/config.py`).
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shadowrl.rl.mtp_config import RLDistillConfig

Advantage = Literal["centred", "positive"]  # `rl/loss.py::ADVANTAGES`

Beta = Annotated[float, Field(ge=0, lt=1)]  # an AdamW decay rate; 1 never forgets


class BranchingConfig(BaseModel):
    """`train.branching`: tree rollouts instead of flat groups (off by default)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        False, description="Roll out trees (roots x branches) instead of flat groups."
    )
    roots: int = Field(
        2, ge=1, description="G1: episodes started from the prepared root per group."
    )
    branches: int = Field(
        2, ge=1, description="G2: continuations per branch point, the root episode's own included."
    )
    rule: Literal["first_edit", "turn", "entropy"] = Field(
        "first_edit",
        description="Where to branch: right after the first turn that edits or writes a "
        "file; after `turn` turns; or 'entropy' (ARPO-style): right after a tool result, "
        "where the policy's mean entropy over the next turn's first `entropy_window` "
        "tokens reaches `entropy_threshold` (the siblings then re-sample that turn).",
    )
    turn: int = Field(
        2, ge=1, description="The branch point of rule 'turn' (turns done before it)."
    )
    entropy_threshold: float = Field(
        0.05,
        ge=0,
        description="Rule 'entropy': the mean per-token entropy (nats, of the sampling "
        "distribution after temperature/top-p) at or above which to branch. Model-dependent: "
        "SmolLM2-135M after SFT, at temperature 1, measured 0.003-0.06 over the first 16 "
        "tokens after a tool result (docs/STATUS.md).",
    )
    entropy_window: int = Field(
        16,
        ge=1,
        description="Rule 'entropy': how many tokens, from the first one generated after a "
        "tool result, the mean entropy is taken over.",
    )
    max_branch_points: int = Field(
        1,
        ge=1,
        description="Most branch points along one root episode (rule 'entropy'; the other "
        "rules fire once). Each forks `branches − 1` continuations; branches never branch.",
    )


class OptimizerConfig(BaseModel):
    """`train.optimizer`: AdamW of the policy in RL (SFT has its own rate: `train.sft.lr`)."""

    model_config = ConfigDict(extra="forbid")

    lr: float = Field(
        1e-5,
        gt=0,
        description="AdamW learning rate of RL. 1e-5, as every CPU run on SmolLM2-135M used: "
        "a few steps at the large-model 1e-6 move nothing.",
    )
    betas: tuple[Beta, Beta] = Field((0.9, 0.99), description="AdamW (β1, β2), each in [0, 1).")
    eps: float = Field(1e-8, gt=0, description="AdamW epsilon.")
    weight_decay: float = Field(0.0, ge=0, description="AdamW decoupled weight decay.")
    grad_clip: float = Field(
        1.0, ge=0, description="Max global gradient L2 norm (0 = no clipping)."
    )


class BatchConfig(BaseModel):
    """`train.batch`: from rollout groups to packed microbatches (`rl/batch.py`)."""

    model_config = ConfigDict(extra="forbid")

    max_staleness: int = Field(
        2,
        ge=0,
        description="Oldest policy lag (trainer version − token version) a sample may have.",
    )
    microbatch_tokens: int = Field(
        4096, ge=1, description="Token budget of one packed microbatch (rows × padded length)."
    )
    token_budget: int = Field(
        0,
        ge=0,
        description="Constant the summed token loss is divided by; 0 = generated tokens of the "
        "step's batch (after staleness filtering). Never a per-sequence length.",
    )
    pad_to_multiple: int = Field(
        8, ge=1, description="Pad microbatch length up to a multiple of this."
    )


class LossConfig(BaseModel):
    """`train.loss`: the RL objective's knobs (`rl/loss.py`)."""

    model_config = ConfigDict(extra="forbid")

    is_clip: float = Field(
        2.0, gt=0, description="Cap C of the truncated importance weight min(π_θ/π_behaviour, C)."
    )
    kl_coef: float = Field(
        0.0,
        ge=0,
        description="Weight of the k3 KL term to the policy RL starts from (0 = off; "
        "`shadowrl train` keeps a frozen copy of it: world_size 1, local backend).",
    )
    advantage: Advantage = Field(
        "centred",
        description="centred: reward − group mean; positive: only its positive half, so "
        "attempts that did not beat their group get no gradient (tree groups keep their own "
        "credit).",
    )


class WeightStoreConfig(BaseModel):
    """`train.weights`: where each policy version is published (`rl/weights.py`)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        "", description="Weight store location (local dir or fsspec URL); '' = <run_dir>/weights."
    )
    full_every: int = Field(
        10, ge=1, description="Publish a full snapshot every N versions; deltas in between."
    )
    shard_bytes: int = Field(
        64 << 20, ge=1, description="Uncompressed bytes per weight-store shard."
    )
    zstd_level: int = Field(3, ge=1, le=22, description="zstd compression level of weight shards.")


class SFTConfig(BaseModel):
    """`train.sft`: the warm start on expert demonstrations (`rl/sft.py`)."""

    model_config = ConfigDict(extra="forbid")

    lr: float = Field(
        5e-5,
        gt=0,
        description="AdamW learning rate of the policy in SFT (RL's is `train.optimizer.lr`; "
        "SFT takes its other AdamW settings from `train.optimizer`).",
    )
    epochs: int = Field(
        1,
        ge=1,
        description="Passes over the demonstration set (1: no demo seen twice; more fit the "
        "demos to an NLL near 0 and leave RL groups that all agree).",
    )
    batch_tokens: int = Field(
        512,
        ge=1,
        description="Generated tokens per SFT optimizer step: a few demonstrations, so a small "
        "demonstration set still gets tens of steps.",
    )


# every projection of a Llama/Qwen-style decoder layer
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoRAConfig(BaseModel):
    """`train.lora`: train low-rank adapters on a frozen base (`rl/lora.py`)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        False,
        description="Train LoRA adapters only; the engine and checkpoints get merged weights "
        "(under a sharded `parallel`, a checkpoint holds the sharded base and the adapters, "
        "merged when it is read or exported).",
    )
    rank: int = Field(16, ge=1, description="r: the adapters' rank.")
    alpha: float = Field(32.0, gt=0, description="α: the update is scaled by α/r.")
    target_modules: list[str] = Field(
        default_factory=lambda: list(LORA_TARGETS),
        description="Names (last component) of the nn.Linear layers that get adapters.",
    )


class TrainConfig(BaseModel):
    """The run's shape and its trainer, batcher, weight store and orchestrator settings."""

    model_config = ConfigDict(extra="forbid")

    # -- the run
    steps: int = Field(6, ge=0, description="RL optimizer steps to run.")
    group_size: int = Field(4, ge=1, description="Rollouts per task (G of GRPO).")
    probe: int = Field(
        0,
        ge=0,
        description="Probe, then extend (rl/probe.py): try each task this many times first and "
        "roll its other group_size − probe attempts only if one of those solved it; a task "
        "the probe never solved is a zero-advantage group of `probe` episodes (0 = off; "
        "local backend only).",
    )
    groups_per_step: int = Field(
        2, ge=1, description="Rollout groups gathered into one optimizer step."
    )
    save_every: int = Field(
        1,
        ge=0,
        description="Checkpoint every N steps (0 = only at the end); a crash loses < N steps.",
    )
    keep_checkpoints: int = Field(2, ge=1, description="Newest checkpoints kept on disk.")
    save_rollouts: bool = Field(
        False,
        description="Write every rollout episode to run_dir/rollouts/ as a record that "
        "`shadowrl replay <file> --from-turn K` continues (the weight store keeps the "
        "versions its tokens were sampled from).",
    )

    # -- compute
    dtype: Literal["float32", "bfloat16"] = Field(
        "float32",
        description="The trainer's copy of the weights (the AdamW master weights): the "
        "policy is loaded in it for `train`/`sft`, and SFT/RL checkpoints are read back in it. "
        "The engine's serving copy is `engine.dtype`; the compute dtype is `autocast`.",
    )
    autocast: Literal["none", "bfloat16"] = Field(
        "none",
        description="Mixed precision: 'bfloat16' runs the trainer's forward and backward "
        "under torch.autocast (matmuls in bf16; softmaxes, the loss, gradients, weights and "
        "AdamW stay in `dtype`). On a CPU with AVX-512 bf16 a SmolLM2-shaped matmul ran 2.5x "
        "its fp32 speed; on one without bf16 instructions (AVX2 only) it ran ~60x slower, and "
        "the trainer warns. The LM head runs outside autocast, in the weights' dtype; on pilot "
        "14's SFT start over 16 agent demos (3,057 tokens) logprobs moved by 5e-4 mean, 3e-3 "
        "at p99 and 0.30 at most, and forward and backward took 0.69x the fp32 time "
        "(docs/results/learning/pilot-dev26/precision.py). Under "
        "`parallel` fsdp/hsdp it also sets FSDP2's mixed-precision policy (rl/fsdp.py): "
        "weights gathered and used in bf16, gradients reduced in float32, shards and AdamW "
        "in `dtype`.",
    )
    world_size: int = Field(
        1,
        ge=1,
        description="Data-parallel ranks: this process is rank 0 and spawns the others "
        "(torch.distributed: gloo on CPU; on CUDA, NCCL for CUDA tensors and GPU r for "
        "rank r); each runs its share of every batch's "
        "microbatches, and the ranks sum gradients before the one AdamW step. How they hold "
        "the model is `parallel`. Each rank writes the weight-store shards of the tensors it "
        "owns.",
    )
    parallel: Literal["replicate", "fsdp", "hsdp"] = Field(
        "replicate",
        description="How the `world_size` ranks hold the model (rl/parallel.py): 'replicate' = "
        "a full replica and AdamW state per rank, gradients all-reduced; 'fsdp' = parameters, "
        "gradients and AdamW state sharded over all ranks (PyTorch FSDP2, rl/fsdp.py); 'hsdp' = "
        "sharded over groups of `shard_size` ranks, replicated across groups. Sharded "
        "checkpoints are torch distributed checkpoints. 'fsdp' also runs on one rank "
        "(FSDP2's mixed precision, sharded checkpoints). Tested on CPU/gloo; CUDA/NCCL is "
        "written and not yet run (benchmarks/gpu/run_gpu.sh runs one rank when a GPU is lent).",
    )
    shard_size: int = Field(
        2,
        ge=1,
        description="'hsdp': ranks one copy of the model is sharded over; `world_size` must be "
        "a multiple of it. Unused by the other strategies.",
    )
    activation_checkpointing: bool = Field(
        True,
        description="Recompute each decoder layer's activations in backward instead of keeping "
        "them. Off, SmolLM2 fp32 keeps ~1.7 MB per token (a 4k-token agent episode ~7 GB) but "
        "the prompt prefix shared by a microbatch's rows is encoded once; on, memory is a "
        "fraction of that for a few percent more compute and no prefix sharing.",
    )
    logprob_chunk: int = Field(
        1024, ge=1, description="Positions per chunk when turning logits into token logprobs."
    )
    temperature: float = Field(
        1.0,
        gt=0,
        description="Temperature the RL rollouts are sampled at: the trainer's log π is the "
        "log-softmax of logits / temperature, the distribution the engine drew each token "
        "from and reported the logprob of. `shadowrl train` requires it to equal "
        "`agent.temperature`.",
    )
    routing_replay: bool = Field(
        True,
        description="Mixture of experts: force each token through the experts the rollout "
        "engine recorded for it (R3, `inference/routing.py`), so the trainer's logprobs "
        "are those of the function that sampled. No effect on dense models or on rows "
        "without recorded routes (production traces keep none yet).",
    )

    # -- what the trainer is made of
    optimizer: OptimizerConfig = Field(
        default_factory=OptimizerConfig, description="AdamW of RL's policy updates."
    )
    batch: BatchConfig = Field(
        default_factory=BatchConfig, description="Staleness filter and microbatch packing."
    )
    loss: LossConfig = Field(
        default_factory=LossConfig, description="Importance-weight cap and KL term of RL's loss."
    )
    weights: WeightStoreConfig = Field(
        default_factory=WeightStoreConfig,
        description="The weight store every policy version is published to.",
    )
    sft: SFTConfig = Field(
        default_factory=SFTConfig, description="The warm start on expert demonstrations."
    )
    mtp: RLDistillConfig = Field(
        default_factory=RLDistillConfig,
        description="Re-distilling the MTP draft heads after policy updates (rl/mtp_rl.py).",
    )
    lora: LoRAConfig = Field(
        default_factory=LoRAConfig,
        description="LoRA RL (rl/lora.py): adapters on a frozen base instead of every weight.",
    )
    branching: BranchingConfig = Field(
        default_factory=BranchingConfig,
        description="Tree rollouts (rl/tree.py): roots x branches per group instead of group_size.",
    )

    @model_validator(mode="after")
    def _parallel_fits(self) -> "TrainConfig":
        if self.parallel == "hsdp" and self.world_size % self.shard_size:
            raise ValueError("train.parallel 'hsdp' needs world_size a multiple of shard_size")
        if self.loss.kl_coef > 0 and self.world_size > 1:
            raise ValueError("train.loss.kl_coef > 0 needs world_size 1 (one reference model)")
        if self.probe and (self.probe >= self.group_size or self.branching.enabled):
            raise ValueError("train.probe needs flat groups and 0 < probe < group_size")
        if self.parallel == "hsdp" and self.world_size < 2:
            raise ValueError("train.parallel 'hsdp' needs world_size >= 2")
        return self


# the flat `train:` keys before the split -> their sections (old YAML keeps loading)
MOVED = {
    **{k: f"optimizer.{k}" for k in ("lr", "betas", "eps", "weight_decay", "grad_clip")},
    **{
        k: f"batch.{k}"
        for k in ("max_staleness", "microbatch_tokens", "token_budget", "pad_to_multiple")
    },
    **{k: f"loss.{k}" for k in ("is_clip", "kl_coef")},
    "weights_url": "weights.url",
    **{k: f"weights.{k}" for k in ("full_every", "shard_bytes", "zstd_level")},
    "sft_lr": "sft.lr",
    "sft_epochs": "sft.epochs",
    "sft_batch_tokens": "sft.batch_tokens",
}
