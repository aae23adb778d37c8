"""datasets: see docs/architecture.md."""
