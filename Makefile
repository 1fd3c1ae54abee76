# Two commands for a newcomer: `make demo` (the main job on embedded defaults) and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-all lint bench

setup:
	@bash scripts/setup.sh

demo: setup
	$(BIN)/shadowrl train

test: setup
	$(BIN)/pytest

test-all: setup
	$(BIN)/pytest -m "not gpu"

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports
