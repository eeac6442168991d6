"""`python -m autograder`."""

import sys

from .grading.grade.nbgrader_light import lean_start, skip_unused_format_checkers

skip_unused_format_checkers()  # for every command: before anything imports nbformat

if __name__ == "__main__":  # grading workers re-import the main module under another name
    if sys.argv[1:2] == ["grade"]:  # warm the workers' fork server while the grader imports nbgrader
        lean_start()
        if not any(arg == "--cluster" or arg.startswith("--cluster=") for arg in sys.argv):
            from .grading.grade.bounded import HELPERS  # the helpers that read and render notebooks: their imports, meanwhile

            HELPERS.warm()
        if "--unsafe-no-sandbox" in sys.argv:
            from .grading.grade.sandbox.client import forkserver_context

            forkserver_context(start=True)
        elif any(arg == "--cluster" or arg.startswith("--cluster=") for arg in sys.argv):
            # the Dask workers run the sandboxes (the driver runs no learner code): ask them to start theirs now
            from .grading.grade.cluster import start_early

            start_early(sys.argv[2:])
        else:
            from .grading.grade.sandbox.client import MODE

            MODE.pool.warm()

    import gc

    from .cli import main

    code = main()
    gc.freeze()  # the process ends here: a last collection over the whole heap took ~0.5 s after a batch
    sys.exit(code)
