#!/usr/bin/env bash
# One-shot GPU check for the inference engine (H200, < 5 minutes): environment report,
# engine vs HF generate on a random Qwen2.5-0.5B-shaped model in bf16, then the engine
# tests including the `gpu` ones. Everything lands in $OUT (default: benchmarks/results).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false

# Offline GPU hosts may lack pure-config deps (pydantic, pytest-asyncio): unpack wheels
# from $WHEELS (made with `pip download --python-version 3.12 ...`) onto the path.
WHEELS="${WHEELS:-.cache/gpu_wheels}"
if ! "$PY" -c "import pydantic, pytest_asyncio" 2>/dev/null && [ -d "$WHEELS" ]; then
  DEPS="$(mktemp -d)"
  "$PY" -c "import sys, zipfile, glob; [zipfile.ZipFile(w).extractall(sys.argv[2]) for w in glob.glob(sys.argv[1] + '/*.whl')]" "$WHEELS" "$DEPS"
  export PYTHONPATH="$PYTHONPATH:$DEPS"
fi

"$PY" - <<'PY' 2>&1 | tee "$OUT/gpu_env.txt"
import torch, transformers
print("torch", torch.__version__, "transformers", transformers.__version__)
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
PY

export PYTHONUNBUFFERED=1
timeout 200 "$PY" benchmarks/engine_vs_hf.py --model qwen2.5-0.5b-random --device cuda \
  --dtype bfloat16 --prompts 32 2>&1 | grep --line-buffered -v "Loading weights" | tee "$OUT/engine_vs_hf_cuda.log"
cp benchmarks/results/engine_vs_hf_cuda.json "$OUT/" 2>/dev/null || true

# Engine tests incl. `gpu` ones; those needing SmolLM2's tokenizer skip on bare hosts.
# addopts cleared: the host may lack pytest-timeout.
timeout 90 "$PY" -m pytest tests/inference/test_engine_graphs.py tests/inference/test_engine.py \
  -o addopts="" -m "gpu or not slow" -q -rs -p no:cacheprovider 2>&1 | tee "$OUT/engine_tests_gpu.log"
