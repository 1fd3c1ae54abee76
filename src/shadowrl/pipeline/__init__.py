"""The training pipeline behind `shadowrl train`: SFT, eval, screen, RL, eval, report.

It sits above `rl` and `eval` (it uses both) and below `commands`, which builds its
`TrainRun` from the config tree.
"""
