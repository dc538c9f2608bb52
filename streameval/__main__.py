import sys

from streameval.cli import main

sys.exit(main())
