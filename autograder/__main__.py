"""`python -m autograder`."""

import sys

from .cli import main

sys.exit(main())
