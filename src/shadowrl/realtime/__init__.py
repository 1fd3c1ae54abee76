"""Real-time RL: production sessions and feedback → rewards → train → gate → deploy or roll back.

The entry module is `cycle.py` (`run_cycles`); the stages are `stages.py`, their typed
results and the measurement seam `context.py`."""
