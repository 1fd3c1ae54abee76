"""shadowrl.inference."""
