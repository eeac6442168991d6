"""`python -m autograder`."""

import sys

from .grading.grade.nbgrader_light import skip_unused_format_checkers

skip_unused_format_checkers()  # for every command: before anything imports nbformat

if __name__ == "__main__":  # grading workers re-import the main module under another name
    from .cli import warm_for

    warm_for(sys.argv[1:])  # `grade`: the workers' fork server warms while the grader imports nbgrader

    import gc

    from .cli import main

    code = main()
    gc.freeze()  # the process ends here: a last collection over the whole heap took ~0.5 s after a batch
    sys.exit(code)
