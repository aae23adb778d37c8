"""``python -m acceptgate``: runs the command the package declares (pyproject's ``[project.scripts]``),
found by name, so the core package never imports its command line (the layer above it)."""

import sys
from importlib.metadata import entry_points

found = entry_points(group="console_scripts", name="acceptgate")
if not found:
    sys.exit("acceptgate is not installed (no 'acceptgate' command is declared): run `pip install -e .` first")
sys.exit(next(iter(found)).load()())
