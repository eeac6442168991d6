"""`python -m autograder.checks`: rewrite the probe side's needs table from the registry (--check: compare only)."""

from .registry import main

raise SystemExit(main())
