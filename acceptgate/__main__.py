import sys

from acceptgate.cli import main

sys.exit(main())
