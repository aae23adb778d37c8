"""suites: see docs/architecture.md."""
