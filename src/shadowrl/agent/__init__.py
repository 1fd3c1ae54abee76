"""shadowrl.agent."""
