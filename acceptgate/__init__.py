"""acceptgate: keeps code-generation evaluations honest."""

from pathlib import Path as _Path

__version__ = "0.1.0"

# One import root. An install maps the repository's top-level folders into this package (setup.py:
# flows/ is acceptgate.flows, sql/ is acceptgate.sql, ...). Run from a source checkout without an
# editable install (the checkout's acceptgate/ first on sys.path), the same folders are found beside it.
_CHECKOUT = _Path(__file__).resolve().parent.parent
if (_CHECKOUT / "setup.py").is_file() and (_CHECKOUT / "flows" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821  (the package's own __path__)
