"""shadowrl.tasks."""
