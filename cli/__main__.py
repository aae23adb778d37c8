"""``python -m cli``: the command line, also without the ``acceptgate`` script on PATH."""

import sys

from cli import main

sys.exit(main())
