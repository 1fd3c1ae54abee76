"""The Ray backend of `shadowrl train`: the trainer, engines and environment workers as
actors behind the orchestrator's small interfaces (`backend.py` wires them)."""
