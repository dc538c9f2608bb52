"""``python -m streameval``: the command line (``streameval.cli.main``)."""

import sys

from streameval.cli.main import main

sys.exit(main())
