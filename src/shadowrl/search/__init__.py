"""shadowrl.search."""
