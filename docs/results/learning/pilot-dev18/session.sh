#!/bin/bash
# One session of dev pilot 18's RL (plan.md, 2026-12-06 10:21 UTC addendum), from the
# repository root of a clone:
#
#   START=/path/to/pilot14/run_dir [SHADOWRL=.venv/bin/shadowrl PYTHON=.venv/bin/python] bash docs/results/learning/pilot-dev18/session.sh HHMM
#
# START is pilot 14's run directory (its sft/step_00000160, eval_sft/, sft.demos.jsonl;
# on a fresh box, `shadowrl train --config docs/results/learning/pilot-dev14/config.yaml`
# makes it, ~37 min of SFT, and is stopped once RL begins). The first session prepares
# runs/pilot18 and seeds its stream log; every session then runs (or resumes) RL until the
# step-60 look or until HHMM UTC, logging the 1-min load and the steps every minute to
# pilot-dev18/sessions.log. Refuses to start with the 1-min load at 2 or above. Since pilot
# 18 broke (plan.md, 14:00 UTC), it also stops the run when the policy has broken:
# BREAK (60) stream instances drawn in a row after the last solved one (`broken.py`).
# A later pilot runs it with HERE (its folder, holding config.yaml and sessions.log) and
# RUN (its run directory) set; the defaults are pilot 18's.
set -euo pipefail
BOX=${1:?usage: START=... session.sh HHMM (the UTC time box)}
HERE=${HERE:-docs/results/learning/pilot-dev18}
RUN=${RUN:-runs/pilot18}
BREAK=${BREAK:-60}
LOG=$HERE/sessions.log
SHADOWRL=${SHADOWRL:-shadowrl}
PYTHON=${PYTHON:-python}
load() { cut -d' ' -f1 /proc/loadavg; }
END=$(date -u -d "${BOX:0:2}:${BOX:2:2}" +%s)  # the next HH:MM UTC, past midnight too
if [ "$END" -le "$(date -u +%s)" ]; then END=$((END + 86400)); fi
if awk -v l="$(load)" 'BEGIN {exit !(l >= 2)}'; then echo "1-min load $(load): wait for the box to settle" >&2; exit 1; fi
if [ ! -e $RUN/rl_stream.jsonl ]; then
  : "${START:?set START to the run directory of pilot 14}"
  mkdir -p $RUN
  ln -sfn "$(realpath "$START/sft")" $RUN/sft
  cp -r "$START/eval_sft" "$START/sft.demos.jsonl" $RUN/
  PYTHONPATH=src $PYTHON docs/results/learning/pilot-dev14/seed_stream.py $RUN/rl_stream.jsonl
fi
echo "$(date -u +%F' '%T) session start, box $BOX UTC, $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -o 'avx512_bf16\|avx512_vnni\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')" >> $LOG
PYTHONPATH=src $SHADOWRL train --config $HERE/config.yaml > $RUN/train.log 2>&1 &
PID=$!
stop_run() {
  pkill -TERM -P $PID || true; kill -TERM $PID || true; sleep 20
  kill -KILL $PID 2>/dev/null || true; pkill -KILL -P $PID 2>/dev/null || true
}
steps() { grep -c '"kind": "rl"' $RUN/metrics.jsonl 2>/dev/null || true; }
while kill -0 $PID 2>/dev/null; do
  echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) step rows $(steps)" >> $LOG
  if unsolved=$($PYTHON docs/results/learning/pilot-dev18/broken.py $RUN $BREAK); then
    echo "$(date -u +%T) the policy broke: $unsolved instances drawn since the last solved one; stopping" >> $LOG
    stop_run
    break
  fi
  if [ "$(date -u +%s)" -ge "$END" ]; then
    echo "$(date -u +%T) time box: stopping" >> $LOG
    stop_run
    break
  fi
  sleep 60
done
wait $PID 2>/dev/null && rc=0 || rc=$?
echo "$(date -u +%F' '%T) session end rc=$rc, step rows $(steps), checkpoints: $(ls $RUN/checkpoints 2>/dev/null | tr '\n' ' ')" >> $LOG
# the sandbox stores of processes that died (a live job's stay)
PYTHONPATH=src $PYTHON -c 'from shadowrl.sandbox import sweep_orphans; sweep_orphans()' || true
