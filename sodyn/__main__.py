"""``python -m sodyn``: the command line (see :mod:`sodyn.cli`)."""

import sys

from sodyn.cli import main

sys.exit(main())
