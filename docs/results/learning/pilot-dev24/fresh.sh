#!/usr/bin/env bash
# Pilot 24's second look (plan.md, 2026-12-07 11:02 UTC addendum): its look checkpoint on the
# 187 fresh held-out instances of pilot 23, at 2 attempts, alone; from the repository root:
#   CKPT=runs/pilot24/checkpoints/step_000000NN SHADOWRL=.venv/bin/shadowrl bash docs/results/learning/pilot-dev24/fresh.sh
#   PYTHONPATH=src python docs/results/learning/pilot-dev14/compare.py docs/results/learning/pilot-dev24/eval_fresh.json \
#     docs/results/learning/pilot-dev23/eval_start.json docs/results/learning/pilot-dev23/tasks/heldout_more.jsonl
set -euo pipefail
HERE=docs/results/learning/pilot-dev24
SHADOWRL=${SHADOWRL:-shadowrl}
: "${CKPT:?set CKPT to the checkpoint of the first look}"
while awk '{exit !($1 >= 2)}' /proc/loadavg; do sleep 20; done
echo "$(date -u +%T) fresh $CKPT start, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)" >> $HERE/evals.log
PYTHONPATH=src $SHADOWRL eval --config docs/results/learning/pilot-dev22/config.yaml \
  --policy "$CKPT" --suite docs/results/learning/pilot-dev23/tasks/heldout_more.jsonl --samples 2 \
  --concurrency 24 --out runs/pilot24/eval_fresh --no-progress --engine.shared_head_tokens=0 \
  > runs/pilot24/eval_fresh.log 2>&1
cp runs/pilot24/eval_fresh/eval.json $HERE/eval_fresh.json
cp runs/pilot24/eval_fresh/report.md $HERE/eval_fresh.md
echo "$(date -u +%T) fresh end, load $(cut -d' ' -f1-3 /proc/loadavg)" >> $HERE/evals.log
