"""`python -m autograder`."""

import sys

from .cli import main

if __name__ == "__main__":  # grading workers re-import the main module under another name
    sys.exit(main())
