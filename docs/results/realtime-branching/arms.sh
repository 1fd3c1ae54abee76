#!/bin/bash
# One session of the branching experiment's two arms (issue 35 §6; README.md, "Arms"), from
# the repository root of a clone:
#
#   [START=/path/to/pilot14/run_dir] [SHADOWRL=.venv/bin/shadowrl PYTHON=.venv/bin/python] bash docs/results/realtime-branching/arms.sh HHMM
#
# runs/pilot14 must link pilot 14's run directory (its sft/step_00000160 is both arms' start,
# read and never written); with START set, a session that finds no runs/pilot14 makes the
# link. HHMM is the UTC time box. The session runs the branching arm (arms.yaml,
# runs/realtime-branching-arm) until its cycles are done, then the whole-session arm
# (arms-whole.yaml, runs/realtime-branching-whole), one cycle per `shadowrl realtime` call,
# each call resuming the arm's run directory (`--cycles` = the cycles done + 1). A cycle is
# started only if the arm's slowest cycle so far (30 min before it has one) plus 3 min ends
# before HHMM; a cycle still running at HHMM is stopped with its server, and the next
# session resumes it at the stage it was in (realtime/state.json). Logs the 1-min load, the
# arm, its cycles and its stage every minute to arms/sessions.log, the command's output to
# <run dir>/driver.log. Refuses to start with the 1-min load at 2 or above, or beside another
# session of this script.
set -euo pipefail
BOX=${1:?usage: [START=...] arms.sh HHMM (the UTC time box)}
[[ $BOX =~ ^([01][0-9]|2[0-3])[0-5][0-9]$ ]] || { echo "HHMM: a UTC time like 1430, not $BOX" >&2; exit 2; }
HERE=docs/results/realtime-branching
LOG=$HERE/arms/sessions.log
SHADOWRL=${SHADOWRL:-shadowrl}
PYTHON=${PYTHON:-python}
CYCLES=$(awk '$1 == "cycles:" {print $2}' $HERE/arms.yaml)  # realtime.cycles, both arms
FIRST=1800  # seconds allowed for an arm's first cycle (pilot 2: 15-17 min with branching)
MARGIN=180  # a call's start (imports, the server loading the live checkpoint) and slack
CONFIGS=(--config configs/realtime-branching.yaml --config $HERE/pilot2.yaml --config $HERE/arms.yaml)
load() { cut -d' ' -f1 /proc/loadavg; }
now() { date -u +%s; }
if awk -v l="$(load)" 'BEGIN {exit !(l >= 2)}'; then echo "1-min load $(load): wait for the box to settle" >&2; exit 1; fi
mkdir -p runs $HERE/arms
exec 9> runs/realtime-branching-arms.lock
flock -n 9 || { echo "another arms.sh session is running" >&2; exit 1; }
if [ ! -e runs/pilot14 ]; then
  : "${START:?set START to the run directory of pilot 14, or link it at runs/pilot14}"
  ln -sfn "$(realpath "$START")" runs/pilot14
fi
[ -d runs/pilot14/sft/step_00000160 ] || { echo "no runs/pilot14/sft/step_00000160" >&2; exit 1; }
END=$(date -u -d "today ${BOX:0:2}:${BOX:2:2}" +%s)
[ "$END" -gt "$(now)" ] || END=$((END + 86400))  # a box after midnight

done_cycles() { [ -f "$1/realtime/cycles.jsonl" ] && wc -l < "$1/realtime/cycles.jsonl" || echo 0; }
slowest() {  # seconds of the arm's slowest finished cycle, FIRST before it has one
  { grep -o '"cycle_s": [0-9.]*' "$1/realtime/cycles.jsonl" 2>/dev/null || true; } \
    | awk -v s=$FIRST '{c = int($2 + 0.5); if (NR == 1 || c > m) m = c} END {print (NR ? m : s)}'
}
stage() { grep -o '"stage": "[a-z]*"' "$1/realtime/state.json" 2>/dev/null | cut -d'"' -f4 || true; }
server_pid() {  # the arm's server (own process group), only if it still runs for this run dir
  local pid
  pid=$(grep -o '"pid": [0-9]*' "$1/realtime/server.json" 2>/dev/null | grep -o '[0-9]*$' || true)
  [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null < /proc/$pid/cmdline | grep -q -- "--run_dir=$(realpath "$1") " && echo "$pid" || true
}
stop() {  # $1 run dir, $2 the call's pid (setsid: its own process group)
  local server
  server=$(server_pid "$1")
  kill -TERM -- -"$2" 2>/dev/null || true
  [ -n "$server" ] && kill -TERM -- -"$server" 2>/dev/null || true
  sleep 20
  kill -KILL -- -"$2" 2>/dev/null || true
  [ -n "$server" ] && kill -KILL -- -"$server" 2>/dev/null || true
}
unmount_dead() {  # the sandbox stores of processes that died (a live job's stay)
  PYTHONPATH=src $PYTHON -c 'from shadowrl.sandbox import sweep_orphans; sweep_orphans()' || true
}
PID= RUN=
trap 'echo "$(date -u +%T) signal: stopping" >> $LOG; [ -n "$PID" ] && stop $RUN $PID; unmount_dead; exit 130' INT TERM

echo "$(date -u +%F' '%T) session start, box $BOX UTC, $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src configs $HERE/*.yaml || echo ' (dirty)'), load $(cut -d' ' -f1-3 /proc/loadavg), branching $(done_cycles runs/realtime-branching-arm)/$CYCLES, whole $(done_cycles runs/realtime-branching-whole)/$CYCLES, $(grep -o 'avx512_bf16\|avx512_vnni\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')" >> $LOG
rc=0
for ARM in branching whole; do
  if [ $ARM = branching ]; then RUN=runs/realtime-branching-arm; EXTRA=(); else
    RUN=runs/realtime-branching-whole; EXTRA=(--config $HERE/arms-whole.yaml); fi
  while [ "$(done_cycles $RUN)" -lt "$CYCLES" ]; do
    n=$(( $(done_cycles $RUN) + 1 )) need=$(( $(slowest $RUN) + MARGIN ))
    if [ $(( $(now) + need )) -gt "$END" ]; then
      echo "$(date -u +%T) $ARM cycle $n not started: it may need $((need / 60)) min, the box ends at $BOX" >> $LOG
      break 2
    fi
    mkdir -p $RUN
    at=$(stage $RUN)
    echo "$(date -u +%T) $ARM cycle $n starts (state: ${at:-none}), load $(cut -d' ' -f1-3 /proc/loadavg)" >> $LOG
    PYTHONPATH=src nice setsid $SHADOWRL realtime "${CONFIGS[@]}" "${EXTRA[@]}" --simulate-users --cycles $n >> $RUN/driver.log 2>&1 &
    PID=$! i=0
    while kill -0 $PID 2>/dev/null; do
      if [ "$(now)" -ge "$END" ]; then
        echo "$(date -u +%T) time box: stopping $ARM cycle $n in its $(stage $RUN) stage" >> $LOG
        stop $RUN $PID
        break
      fi
      [ $((i % 12)) -eq 0 ] && echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $ARM cycles $(done_cycles $RUN) stage $(stage $RUN)" >> $LOG
      i=$((i + 1)); sleep 5
    done
    wait $PID 2>/dev/null && rc=0 || rc=$?
    PID=
    if [ "$(now)" -ge "$END" ] || [ $rc -ne 0 ] || [ "$(done_cycles $RUN)" -lt $n ]; then
      echo "$(date -u +%T) $ARM call rc=$rc, $(done_cycles $RUN) cycles written: session over (see $RUN/driver.log)" >> $LOG
      server=$(server_pid $RUN); [ -n "$server" ] && kill -TERM -- -"$server" 2>/dev/null || true
      break 2
    fi
    echo "$(date -u +%T) $ARM cycle $n done in $(grep -o '"cycle_s": [0-9.]*' $RUN/realtime/cycles.jsonl | tail -1 | awk '{printf "%.1f", $2 / 60}') min, load $(cut -d' ' -f1-3 /proc/loadavg)" >> $LOG
  done
done
echo "$(date -u +%F' '%T) session end rc=$rc, branching $(done_cycles runs/realtime-branching-arm)/$CYCLES, whole $(done_cycles runs/realtime-branching-whole)/$CYCLES" >> $LOG
unmount_dead
