"""scoring: see docs/architecture.md."""
