"""``python -m acceptgate.cli``: the command line, also without the ``acceptgate`` script on PATH. It lives
in the command-line layer, so no module below it names the CLI."""

import sys

from acceptgate.cli import main

sys.exit(main())
