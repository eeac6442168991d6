"""nbgrader course configuration, and the autograder's own settings (both traitlets).

Use it with every nbgrader command: `nbgrader <command> --NbGrader.config_file=grading_config.py`
(nbgrader 0.9.6 ignores `--config FILE`), and with `python -m autograder grade ... --config grading_config.py`.
The course directory (submissions, autograded copies, feedback, gradebook.db) is
$AUTOGRADER_COURSE_DIR, or ./course beside this file; it is never committed.
"""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent

c = get_config()

# ---- nbgrader: where things live
c.CourseDirectory.course_id = "autograd-workbook"
c.CourseDirectory.root = os.environ.get("AUTOGRADER_COURSE_DIR", str(HERE / "course"))
# Absolute paths: the instructor sources and the learner notebooks stay in the repo
# whatever course directory grading happens in.
c.CourseDirectory.source_directory = str(HERE / "solutions")
c.CourseDirectory.release_directory = str(HERE / "notebooks")
c.CourseDirectory.db_assignments = [{"name": "workbook"}]

# ---- nbgrader: execution
c.Execute.timeout = 30  # seconds per cell
c.Execute.interrupt_on_timeout = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE: replace the next line with your code\nraise NotImplementedError()"}

# ---- the autograder's own settings (autograder.settings)
c.Tolerance.rtol = 1e-5
c.Tolerance.atol = 1e-6
c.Tolerance.forward_rtol = 1e-9
c.Limits.check_timeout = 10.0
c.Limits.cell_timeout = 60.0
c.Limits.notebook_timeout = 300.0
c.Limits.memory_mb = 2048
c.Limits.output_bytes = 1_000_000
c.BatchGrading.jobs = 0  # one worker per CPU
