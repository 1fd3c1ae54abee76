"""Inference engine settings."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Positive = Annotated[int, Field(ge=1)]


class SpeculativeConfig(BaseModel):
    """Speculative decoding (`shadowrl.inference.speculative`, drafts: `drafters.py`)."""

    model_config = ConfigDict(extra="forbid")
    drafter: Literal["mtp", "ngram"] = Field(
        default="mtp",
        description="Where drafts come from. 'mtp': the MTP draft heads (active only when "
        "the engine has heads). 'ngram': prompt lookup, the tokens that followed the latest "
        "earlier occurrence of the context's newest n-gram in the request's own prompt + "
        "completion (no heads; free on agent traffic that re-reads files and repeats "
        "tool-call syntax); a step where no row has a match decodes plainly.",
    )
    k: int = Field(
        default=3,
        ge=0,
        description="Tokens drafted per step and verified in one forward (0 = off). With "
        "MTP heads, at most the heads' count.",
    )
    ngram_longest: int = Field(
        default=4, ge=1, description="'ngram': the longest context suffix looked up."
    )
    ngram_shortest: int = Field(
        default=2, ge=1, description="'ngram': the shortest suffix that may make a draft."
    )
    heads: str = Field(
        default="",
        description="Path of the MTP heads (a file or a directory holding mtp.safetensors); "
        "'' = beside the model's checkpoint, if there.",
    )
    acceptance: Literal["exact", "rejection"] = Field(
        default="exact",
        description="'exact': accept a draft only where it equals the token the main model "
        "samples there from the request's own random stream, so the output is identical to "
        "non-speculative decoding. 'rejection': Leviathan-style speculative sampling (the "
        "main model's distribution, other random numbers, tokens differ from non-speculative).",
    )
    max_batch: int = Field(
        default=8,
        ge=0,
        description="Speculate only while at most this many requests run; larger batches "
        "decode plainly (once compute-bound, a verify of k+1 tokens per row costs about k+1 "
        "decode rows, and drafting k more LM-head products per row).",
    )
    auto: bool = Field(
        default=True,
        description="Measure, per batch size, seconds per generated token with and without "
        "speculation (re-probing each side every 32 steps), and speculate only where it is "
        "cheaper. With heads that accept little (benchmarks/speculative.py on CPU) this "
        "turns speculation off by itself. Off: always speculate within max_batch.",
    )


class EngineConfig(BaseModel):
    """The batched generation engine (`shadowrl.inference.engine.Engine`)."""

    model_config = ConfigDict(extra="forbid")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto",
        description="Precision the engine serves in; it casts its model (and KV cache) once at "
        "start, and every weight update is cast on the way in. 'auto' keeps the dtype of the "
        "model it is handed: the trainer's (`train.dtype`) in RL, float32 for a policy a "
        "command loads (commands load the policy they serve in this dtype). "
        "'bfloat16' halves the bytes read per decode step (1.5-1.9x faster decode on CPUs "
        "with AVX512-BF16; on CPUs without bf16 instructions it is emulated and far slower, "
        "and the engine warns) while the trainer keeps fp32 master weights, as RL stacks do "
        "with vLLM; the logprob gap is what the trainer's importance ratio corrects. With "
        "`cpu_decode: native` a bf16 engine's decode steps run the C layers in fp32 over the "
        "bf16 weights: faster than PyTorch's bf16 layers and closer to the fp32 trainer.",
    )
    weights: Literal["dense", "int8", "fp8"] = Field(
        default="dense",
        description="How the Linear layers (LM head included) compute. 'dense': in `dtype`. "
        "'int8' (CPU, float32): int8 weights per output channel and int8 activations "
        "quantised per call (PyTorch dynamic quantisation; oneDNN or fbgemm kernels, the "
        "faster at engine start); 'fp8' (CUDA, compute capability >= 8.9, untested here): "
        "float8_e4m3 weights and activations. The engine keeps the full-precision weights "
        "that swaps write into and re-quantises after each swap. Rollouts then differ from "
        "the trainer's policy by the quantisation gap, which the trainer's truncated "
        "importance ratio corrects (its log-ratio is logged as rollout_log_ratio_*).",
    )
    max_batch: int = Field(
        default=16,
        ge=1,
        description="Sequences decoded together in one step. The KV cache holds this many slots "
        "(each up to max_seq_len), so it bounds memory: 16 x 4.6k tokens of SmolLM2 is ~3.4 GB fp32.",
    )
    max_seq_len: int = Field(
        default=4608,
        ge=16,
        description="Longest prompt + completion; longer requests finish 'length'. The default "
        "covers the agent's 4,096-token context plus one reply.",
    )
    initial_kv_len: int = Field(
        default=1024,
        ge=16,
        description="Starting KV capacity per slot; it doubles on demand up to max_seq_len, "
        "so short workloads do not reserve max_batch * max_seq_len of memory.",
    )
    kv: Literal["contiguous", "paged"] = Field(
        default="contiguous",
        description="KV cache layout (`inference/kv.py`, `inference/paged.py`). 'contiguous': "
        "one buffer per slot, its capacity the longest sequence's (doubling). 'paged': "
        "fixed-size blocks from one pool and a block table per slot, so memory follows the "
        "tokens actually held; GRPO groups, repeated prompts and the prefix cache share "
        "blocks, copied only on write. Same tokens and logprobs; a CPU decode step reads a "
        "row of consecutive blocks in place (the C layer of `cpu_decode` every row, through "
        "the block table), other reads gather blocks.",
    )
    kv_dtype: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto",
        description="What the KV cache stores. 'auto': the engine's dtype. 'bfloat16' under "
        "float32 weights halves the bytes a decode step reads from the cache (at 32 rows of "
        "~900 tokens that read took as long as the matrix products; issue 34) and the cache's "
        "memory; keys and values are rounded to bf16 as they are written and every attention "
        "reads them rounded (a prefill too, so prefix-cache reuse stays exact), upcast to "
        "float32, so logprobs move by about bf16's rounding, which RL's truncated importance ratio corrects as it does "
        "for `weights: int8`. The CPU decode kernels (`cpu_attention`, `cpu_decode`) read it "
        "in place; other attention paths upcast what they read.",
    )
    kv_block_size: int = Field(default=16, ge=1, description="'paged': positions per KV block.")
    kv_blocks: int = Field(
        default=0,
        ge=0,
        description="'paged': the most blocks the pool may hold (the KV memory budget; "
        "block 0 is scratch). 0 = max_batch x max_seq_len plus prefix_cache_tokens, as "
        "much as 'contiguous' at its largest. When the running sequences outgrow it, the "
        "newest is preempted and its KV recomputed later (`inference/preemption.py`).",
    )
    cpu_attention: Literal["auto", "native", "torch"] = Field(
        default="auto",
        description="How a CPU decode step attends each row over its own length "
        "(`inference/native.py`). 'native': a small C kernel (fp32 or bf16 KV), compiled "
        "on first use with $CC or cc for this CPU and cached under ~/.cache/shadowrl/kernels; "
        "an error if it cannot be built. 'torch': PyTorch's SDPA, one call per row. 'auto': "
        "native, else torch with a warning. The two agree to float tolerance, not bit for bit.",
    )
    cpu_products: Literal["auto", "native", "torch"] = Field(
        default="torch",
        description="How a float32 CPU engine with dense weights multiplies by its Linear "
        "layers (LM head included) at 1-16 rows, i.e. in decode steps "
        "(`inference/native.py`). 'native': a C kernel that reads each weight once per call "
        "(PyTorch's product re-packs it and costs 2-2.5x its 1-row time at 4-16 rows), "
        "compiled on first use like cpu_attention's; an error if it cannot be built. "
        "'torch': F.linear. 'auto': native, else torch with a warning. More rows, other "
        "dtypes, int8/fp8 weights and GPUs always use PyTorch. Agrees with torch to float "
        "tolerance, not bit for bit.",
    )
    cpu_decode: Literal["auto", "native", "torch"] = Field(
        default="torch",
        description="How a CPU decode step runs the decoder's layers "
        "(`inference/native_layer.py`). 'native': each layer (norms, products, rotary, the "
        "KV write, attention over each row's own length, SiLU MLP, residuals) in one C "
        "call for all rows, reusing cpu_products' and cpu_attention's kernels and "
        "compiled on first use like them; an error if it cannot be built. 'torch': one "
        "PyTorch op at a time (~1,200 calls a step for SmolLM2). 'auto': native, else "
        "torch with a warning. Dense Llama and Qwen2 models with float32 or bfloat16 weights "
        "(bf16 ones widened to fp32 as they are read: fp32 maths over half the bytes) over "
        "either KV cache (storing fp32 or bf16: `kv_dtype`; the paged one read in place "
        "through its block table): int8/fp8 weights, Qwen3 and MoE layers and GPUs use "
        "PyTorch's layers, as do steps of more than 64 rows and steps "
        "that attend with a mask (cpu_attention 'torch' below 256 positions); its own steps "
        "attend with cpu_attention's C kernel. Agrees with torch to float tolerance, not "
        "bit for bit.",
    )
    prefill_tokens_per_step: int = Field(
        default=4096,
        ge=1,
        description="Prompt tokens prefilled between two decode steps, counted as the padded "
        "batch (new prompts x the longest); at least one request is admitted. Bounds how long "
        "a burst of new prompts stalls running decodes.",
    )
    prefix_cache_tokens: int = Field(
        default=32768,
        ge=0,
        description="Tokens of finished requests' KV kept for reuse (0 = off). An agent's next "
        "turn, whose prompt extends the last one, then prefills only the new tokens, and "
        "prompts sharing a system prompt share its KV. Costs ~46 KB per token for SmolLM2 "
        "fp32 (32k tokens ~1.5 GB). Cleared at each weight swap, so reuse is exact.",
    )
    shared_head_tokens: int = Field(
        default=64,
        ge=0,
        description="A new prompt that shares at least this many more leading tokens than the "
        "prefix cache holds with a running prompt or with another admitted with it (the system "
        "prompt and tool schemas of agent tasks starting at once) borrows that head: the "
        "lender's prompt is parked (after its prefill) and the borrower restores it "
        "(`admission.borrowed_heads`). 0 = off. Below ~64 tokens the second prefill call "
        "costs more than it saves.",
    )
    recompute_kv_on_swap: bool = Field(
        default=False,
        description="After a weight swap, re-run the prefill of every running request so its "
        "KV comes from the new weights. Off: the swap is a pure copy (milliseconds) and old "
        "KV stays (slightly stale keys/values; logprobs still come from the new weights). "
        "On: exact new-policy KV at the cost of one prefill per running request.",
    )
    cuda_graphs: bool = Field(
        default=True,
        description="On CUDA, replay each decode step from a captured CUDA graph (one launch "
        "per step instead of one per kernel). The KV cache is then allocated at max_seq_len "
        "up front. Falls back to eager decoding, with a warning, if capture fails.",
    )
    compile_decode: bool = Field(
        default=False,
        description="Experimental. With cuda_graphs on CUDA, torch.compile the decode forward "
        "before capturing it: Inductor would fuse the ~50 small kernels per layer that eager "
        "PyTorch launches (1,256 per step for Qwen2.5-0.5B, ~4 ms of a 4.7 ms step on an H200). "
        "Costs compiles at engine start (~90 s seen); if a compile fails the engine decodes "
        "eagerly with a warning. Not yet measured in this form: benchmarks/results/gpu_notes.md.",
    )
    cuda_graph_batch_sizes: list[Positive] = Field(
        default=[1, 2, 4, 8, 16, 32, 64, 128],
        description="Batch buckets captured as graphs; a batch runs padded to the next bucket "
        "(max_batch is always added as the last one).",
    )
    cuda_graph_spans: list[Positive] = Field(
        default=[1024, 2048, 4096, 8192, 16384],
        description="Attention spans (context buckets) captured as graphs; a step attends over "
        "the next bucket above its longest sequence (max_seq_len is always the last one). "
        "Fewer buckets capture faster; more waste less attention on short contexts.",
    )
    speculative: SpeculativeConfig = Field(
        default_factory=SpeculativeConfig,
        description="Speculative decoding with MTP draft heads (exact by default).",
    )

    @property
    def weights_dtype(self) -> str:
        """The dtype a command loads a policy to serve in: `dtype`, float32 for 'auto'."""
        return "float32" if self.dtype == "auto" else self.dtype
