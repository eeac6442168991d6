"""`python -m autograder.checks`: rewrite the probe side's needs table from the registry (--check: compare only)."""

from .registry import main

if __name__ == "__main__":  # importing the module (as pkgutil walks the package) must not rewrite anything
    raise SystemExit(main())
