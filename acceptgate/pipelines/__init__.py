"""Pipelines: the warehouse side of every run. ``ledger`` is the one run life cycle (attempt, stage
writes after their expectations, finish or fail, publish); the other modules here call the domain
packages (which compute only) and write their frames through the ledger."""
