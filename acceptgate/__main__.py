"""``python -m acceptgate``: the command line, also without the ``acceptgate`` script on PATH."""

import sys

from acceptgate.cli import main

sys.exit(main())
