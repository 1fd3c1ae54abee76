#!/usr/bin/env bash
# Makes, on this machine, what benchmarks/gpu/learn.sh needs on the device: the bundled
# SmolLM2 GGUF in three parts (one call carries at most 64 MiB, the working tree included,
# and the GGUF alone is 94 MiB) with its sha256, and the wheels the device image lacks
# (Python 3.12, manylinux), all under .cache/gpu_learn (ignored by git).
#
#   bash benchmarks/gpu/learn_prep.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-.venv/bin/python}"
DIR=.cache/gpu_learn
rm -rf "$DIR" && mkdir -p "$DIR/part1" "$DIR/part2" "$DIR/part3" "$DIR/wheels"

GGUF=$("$PY" -c "from shadowrl.models import smollm2_gguf; print(smollm2_gguf())")
sha256sum "$GGUF" | cut -d' ' -f1 > "$DIR/gguf.sha256"
split -n 3 -d -a 1 "$GGUF" "$DIR/gguf.part"
for i in 0 1 2; do mv "$DIR/gguf.part$i" "$DIR/part$((i + 1))/"; done

# the versions this project's lock of the CPU venv uses; the device has torch, transformers,
# numpy, pyyaml, httpx, anyio, click, tqdm, requests, jinja2/markupsafe and safetensors
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$DIR/wheels" \
  pydantic==2.14.4 pydantic_core==2.50.5 annotated_types==0.8.0 typing_inspection==0.4.5 \
  typing_extensions==4.16.0 sqlalchemy==2.1.9 alembic==1.20.1 mako==1.4.3 rich==15.0.0 \
  markdown_it_py==4.3.0 mdurl==0.1.2 pygments==2.21.0 starlette==1.10.0 zstandard==0.25.0 \
  gguf==0.19.0 dill==0.4.1
du -sh "$DIR"/*
