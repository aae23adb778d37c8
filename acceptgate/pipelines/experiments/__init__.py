"""Seed experiments re-run on this project's data: each prints the seed's table beside the measured one
and stores both in ``experiment_runs`` / ``experiment_rows`` (``acceptgate experiment NAME``)."""
