"""shadowrl.rl."""
