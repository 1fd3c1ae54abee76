#!/usr/bin/env bash
# Pilot 26's look (plan.md, 2026-12-07 23:20 UTC addendum): its look checkpoint on pilot 23's
# 187 fresh held-out instances at 2 attempts, on pilot 21's fp32 engine path (as the start and
# pilots 21-22 were evaluated there), alone; from the repository root:
#   CKPT=runs/pilot26/checkpoints/step_000000NN SHADOWRL=.venv/bin/shadowrl bash docs/results/learning/pilot-dev26/fresh.sh
#   PYTHONPATH=src python docs/results/learning/pilot-dev26/look.py
set -euo pipefail
HERE=docs/results/learning/pilot-dev26
SHADOWRL=${SHADOWRL:-shadowrl}
: "${CKPT:?set CKPT to the look checkpoint}"
while awk '{exit !($1 >= 2)}' /proc/loadavg; do sleep 20; done
echo "$(date -u +%T) fresh $CKPT start, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD), $(grep -o 'avx512_bf16\|avx512_vnni\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')" >> $HERE/evals.log
PYTHONPATH=src $SHADOWRL eval --config docs/results/learning/pilot-dev22/config.yaml \
  --policy "$CKPT" --suite docs/results/learning/pilot-dev23/tasks/heldout_more.jsonl --samples 2 \
  --concurrency 24 --out runs/pilot26/eval_fresh --no-progress --engine.shared_head_tokens=0 \
  > runs/pilot26/eval_fresh.log 2>&1
cp runs/pilot26/eval_fresh/eval.json $HERE/eval_fresh.json
cp runs/pilot26/eval_fresh/report.md $HERE/eval_fresh.md
echo "$(date -u +%T) fresh end, load $(cut -d' ' -f1-3 /proc/loadavg)" >> $HERE/evals.log
