"""shadowrl.eval."""
