#!/usr/bin/env bash
# Issue 32, item 8: dev pilot 5c's design on one GPU (configs/gpu-learn.yaml): SFT, the SFT
# eval, the screen, 24 RL steps and the RL eval, then the gate's RL - SFT. Prepared, NOT yet
# run. Sized to end inside one 10-minute call; the train command has its own time limit, so
# whatever stages finished still come back.
#
# The bundled GGUF (94 MiB) and the wheels the image lacks do not fit one call (64 MiB with
# the working tree), so `bash benchmarks/gpu/learn_prep.sh` splits them here and three
# calls, each within the 30 s a warm machine keeps its files, carry one part each; each
# call stashes its part in /tmp/gpu_learn and the third, once the joined GGUF matches its
# sha256, runs:
#   run(command="bash benchmarks/gpu/learn.sh", carry=[".cache/gpu_learn/gguf.sha256", ".cache/gpu_learn/part1"])
#   run(command="bash benchmarks/gpu/learn.sh", carry=[".cache/gpu_learn/gguf.sha256", ".cache/gpu_learn/part2"])
#   run(command="bash benchmarks/gpu/learn.sh", carry=[".cache/gpu_learn/gguf.sha256", ".cache/gpu_learn/part3", ".cache/gpu_learn/wheels"], timeout_s=600)
# Results land in $OUT: the run's log, both eval.json files, the gate's verdict, metrics.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-runs/gpu-learn-out}"
LIMIT="${LIMIT:-540}"  # seconds for `shadowrl train`, inside the call's 600
SRC=.cache/gpu_learn
STASH=/tmp/gpu_learn
mkdir -p "$OUT" "$STASH"
cp "$SRC"/part*/gguf.part* "$STASH"/ 2>/dev/null
GGUF="$STASH/SmolLM2-135M-Instruct.Q4_1.gguf"
cat "$STASH"/gguf.part0 "$STASH"/gguf.part1 "$STASH"/gguf.part2 > "$GGUF" 2>/dev/null
if [ "$(sha256sum "$GGUF" | cut -d' ' -f1)" != "$(cat "$SRC/gguf.sha256")" ]; then
  echo "stashed: $(ls "$STASH" | grep -c part) of 3 parts of the GGUF in $STASH; carry the next"
  exit 0
fi

PY="${PYTHON:-python3}"
if [ -d "$SRC/wheels" ] && ! "$PY" -c "import pydantic, sqlalchemy, gguf, zstandard" 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$SRC"/wheels/*.whl || exit 1
  export PYTHONPATH="/tmp/site"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export TOKENIZERS_PARALLELISM=false
SHADOWRL=("$PY" -m shadowrl.commands.main)

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  "$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())"
  nproc; } 2>&1 | tee "$OUT/env.txt"

RUN=runs/gpu-learn
timeout "$LIMIT" "${SHADOWRL[@]}" train --config configs/gpu-learn.yaml --model.path="$GGUF" \
  2>&1 | grep --line-buffered -v "Loading weights" > "$OUT/train.log"
rc=${PIPESTATUS[0]}
grep -E "shadowrl\.(pipeline|eval\.runner|rl)|Error" "$OUT/train.log" | tail -60
echo "train exit: $rc (124: stopped at $LIMIT s)"
if [ -f "$RUN/eval_rl_step24/eval.json" ] && [ -f "$RUN/eval_sft/eval.json" ]; then
  "${SHADOWRL[@]}" gate --candidate "$RUN/eval_rl_step24" --incumbent "$RUN/eval_sft" 2>&1 \
    | tee "$OUT/gate.txt"
  cp "$RUN/eval_rl_step24/eval.json" "$OUT/eval_rl.json"
fi
[ -f "$RUN/eval_sft/eval.json" ] && cp "$RUN/eval_sft/eval.json" "$OUT/eval_sft.json"
[ -f "$RUN/metrics.jsonl" ] && cp "$RUN/metrics.jsonl" "$OUT/"
exit 0
