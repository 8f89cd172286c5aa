"""`python -m convlab` is the `convlab` command."""

import sys

from convlab.cli import main

sys.exit(main())
