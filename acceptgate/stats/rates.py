"""A rate always travels with its numerator and its named denominator (SYSTEM.md section 3: "report
rates over all tasks and over delivered tasks, always naming the denominator")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rate:
    numerator: float  # a count, or a sum of run-averaged 0/1 outcomes
    denominator: int
    denominator_name: str  # e.g. "all tasks", "delivered tasks", "E+ trajectories"

    def __post_init__(self) -> None:
        if self.denominator < 0 or self.numerator < 0:
            raise ValueError("a rate's numerator and denominator are non-negative")
        if self.numerator > self.denominator:
            raise ValueError(f"numerator {self.numerator} exceeds denominator {self.denominator}")

    @property
    def value(self) -> float:
        """numerator / denominator; NaN when the denominator is 0 (never a silent 0)."""
        return self.numerator / self.denominator if self.denominator else float("nan")

    def __str__(self) -> str:
        num = f"{self.numerator:g}"
        pct = "n/a" if not self.denominator else f"{100 * self.value:.1f}%"
        return f"{pct} ({num}/{self.denominator} {self.denominator_name})"
