"""Real-time RL: production sessions and feedback → rewards → train → gate → deploy or roll back."""
