"""acceptgate: keeps code-generation evaluations honest."""

__version__ = "0.1.0"
