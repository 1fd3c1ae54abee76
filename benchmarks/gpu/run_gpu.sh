#!/usr/bin/env bash
# One-shot GPU check (H200, ~5 minutes): environment report, engine vs HF generate on a
# random Qwen2.5-0.5B-shaped model in bf16, the `gpu` tests (CUDA graphs, trainer on
# CUDA), then shadowrl vs TRL on a random SmolLM2-135M-shaped model. Each part has its
# own time limit, so one failure does not hide the others. Logs land in $OUT.
#
#   run(command="bash benchmarks/gpu/run_gpu.sh", carry=[".cache/gpu_wheels", ".cache/gpu_tok"])
#   PARTS="gpu_tests vs_trl" bash benchmarks/gpu/run_gpu.sh    # a subset
#   PARTS=decode_profile PROFILE_ARGS=--compile bash benchmarks/gpu/run_gpu.sh
#   PARTS=fsdp_memory bash benchmarks/gpu/run_gpu.sh   # issue 36: results to docs/results/gpu/
#
# .cache/gpu_wheels: wheels the GPU image lacks (pydantic, pytest-asyncio, trl, datasets...),
# .cache/gpu_tok: SmolLM2's tokenizer; benchmarks/results/gpu_notes.md says how to remake both.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
export PYTHONPATH="$PWD/src:$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

WHEELS="${WHEELS:-.cache/gpu_wheels}"
if [ -d "$WHEELS" ] && ! "$PY" -c "import pydantic, pytest_asyncio, trl" 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$WHEELS"/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi

PARTS="${PARTS:-engine_vs_hf gpu_tests vs_trl}"
section() { echo; echo "=== $1 ($(date +%T))"; }
wanted() { [[ " $PARTS " == *" $1 "* ]]; }

section env
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv
  "$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())"
  "$PY" -c "import trl, datasets; print('trl', trl.__version__, 'datasets', datasets.__version__)"
} 2>&1 | tee "$OUT/gpu_env.txt"

if wanted engine_vs_hf; then
section engine_vs_hf
timeout 150 "$PY" benchmarks/engine_vs_hf.py --model qwen2.5-0.5b-random --device cuda \
  --dtype bfloat16 --prompts 32 --repeats 3 2>&1 | grep --line-buffered -v "Loading weights" \
  | tee "$OUT/engine_vs_hf_cuda.log"
cp benchmarks/results/engine_vs_hf_cuda.json "$OUT/" 2>/dev/null || true
fi

if wanted engine_compile; then  # engine_vs_hf with engine.compile_decode
section engine_compile
timeout 200 "$PY" benchmarks/engine_vs_hf.py --model qwen2.5-0.5b-random --device cuda \
  --dtype bfloat16 --prompts 32 --repeats 3 --compile 2>&1 | grep --line-buffered -v "Loading weights" \
  | tee "$OUT/engine_vs_hf_cuda_compile.log"
cp benchmarks/results/engine_vs_hf_cuda_compile.json "$OUT/" 2>/dev/null || true
fi

# `gpu` tests; those needing the bundled SmolLM2 skip on bare hosts. addopts cleared
# (it deselects `gpu`), pytest-timeout kept per test.
if wanted gpu_tests; then
section gpu_tests
timeout 120 "$PY" -m pytest tests/inference/test_engine_graphs.py tests/rl/test_trainer.py \
  -o addopts="" -m "gpu or not slow" -q -rs -p no:cacheprovider --timeout=60 2>&1 \
  | tee "$OUT/gpu_tests.log" | tail -25
fi

if wanted vs_trl; then
section vs_trl
timeout 200 "$PY" benchmarks/vs_trl.py --device cuda --model smollm2-random \
  --tokenizer .cache/gpu_tok --engine-dtype bfloat16 --trl-bf16 true --prompts 8 \
  --generations 8 --max-completion-length 256 --steps 3 --warmup 1 --torch-threads 8 \
  --out "$OUT/vs_trl_cuda.json" 2>&1 | grep --line-buffered -v "Warning\|warn(" \
  | tee "$OUT/vs_trl_cuda.log" | grep -v "^{"
fi
if wanted decode_profile; then  # diagnostic, not in the default PARTS
section decode_profile
timeout 150 "$PY" benchmarks/gpu/decode_profile.py ${PROFILE_ARGS:-} 2>&1 | tee "$OUT/decode_profile.log"
fi
if wanted moe_paged; then  # issue 37, not in the default PARTS: PARTS=moe_paged (~8 min, untried)
section moe_paged
timeout 540 "$PY" benchmarks/gpu/moe_paged.py --out "$OUT" 2>&1 | tee "$OUT/moe_paged.log"
fi
if wanted fsdp_memory; then  # issue 36, not in the default PARTS: PARTS=fsdp_memory (~5 min, untried)
section fsdp_memory  # one NCCL rank: FSDP2's mixed precision vs a replica under autocast, LoRA
timeout 420 "$PY" benchmarks/fsdp_memory.py --device cuda --fsdp-ranks 1 --dtype float32 \
  --autocast bfloat16 --sizes 1.5b 3b --steps 3 --tokens 1024 --out "$OUT/fsdp_memory_cuda.json" \
  2>&1 | grep --line-buffered -v "Loading weights" | tee "$OUT/fsdp_memory_cuda.log"
fi
section done
