"""`python -m autograder`."""

import sys

if __name__ == "__main__":  # grading workers re-import the main module under another name
    if sys.argv[1:2] == ["grade"]:  # warm the workers' fork server while the grader imports nbgrader
        if "--unsafe-no-sandbox" in sys.argv:
            from .grading.worker import forkserver_context

            forkserver_context(start=True)
        else:
            from .grading.sandbox import MODE

            MODE.pool.warm()

    from .cli import main

    sys.exit(main())
