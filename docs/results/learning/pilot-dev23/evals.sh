#!/usr/bin/env bash
# The confirmatory look's three evals (plan.md, 2026-12-07 04:44 UTC addendum), one at a time,
# each started once the 1-minute load is below 2; from the repository root:
#   SHADOWRL=.venv/bin/shadowrl bash docs/results/learning/pilot-dev23/evals.sh
# Each eval's `eval.json` is copied beside this script; `evals.log` keeps times and loads.
set -euo pipefail
HERE=docs/results/learning/pilot-dev23
SHADOWRL=${SHADOWRL:-shadowrl}
declare -A POLICY=(
  [start]=runs/pilot14/sft/step_00000160
  [p21_step8]=runs/pilot21/checkpoints/step_00000008
  [p22_step10]=runs/pilot22/checkpoints/step_00000010
)
for name in start p21_step8 p22_step10; do
  while awk '{exit !($1 >= 2)}' /proc/loadavg; do sleep 20; done
  echo "$(date -u +%T) $name start, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)" >> $HERE/evals.log
  PYTHONPATH=src $SHADOWRL eval --config docs/results/learning/pilot-dev22/config.yaml \
    --policy "${POLICY[$name]}" --suite $HERE/tasks/heldout_more.jsonl --samples 2 \
    --concurrency 24 --out runs/pilot23/eval_$name --no-progress --engine.shared_head_tokens=0 \
    > runs/pilot23/eval_$name.log 2>&1
  cp runs/pilot23/eval_$name/eval.json $HERE/eval_$name.json
  cp runs/pilot23/eval_$name/report.md $HERE/eval_$name.md
  echo "$(date -u +%T) $name end, load $(cut -d' ' -f1-3 /proc/loadavg)" >> $HERE/evals.log
done
