"""The course's nbgrader configuration and the autograder's own settings (both traitlets), in one file.

nbgrader finds it with no flag when run from this folder (it reads `nbgrader_config.py` in the current directory),
and so do `python -m autograder grade` and `./workbook instructor`. From elsewhere, pass
`--NbGrader.config_file=/path/to/nbgrader_config.py` to nbgrader (nbgrader 0.9 ignores `--config`) and
`--config /path/to/nbgrader_config.py` to `python -m autograder grade`.

The course directory (exchange, submissions, autograded copies, feedback, gradebook.db, summaries) is
$AUTOGRADER_COURSE_DIR, or ./course beside this file; it is never committed. Due dates are not set here: nbgrader
keeps them in the gradebook: `nbgrader db assignment add workbook --duedate="YYYY-MM-DD HH:MM:SS UTC"` (the instructor
guide's step 3, docs/instructor/one-machine.md, computes one a week from the day it is run).
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COURSE = Path(os.environ.get("AUTOGRADER_COURSE_DIR") or HERE / "course").resolve()

c = get_config()  # noqa: F821 (traitlets provides it)

# ---- nbgrader: where things live
c.CourseDirectory.course_id = "autograd-workbook"
c.CourseDirectory.root = str(COURSE)
# Absolute paths: the instructor sources and the learner notebooks stay in the repo
# whatever course directory grading happens in.
c.CourseDirectory.source_directory = str(HERE / "solutions")
c.CourseDirectory.release_directory = str(HERE / "notebooks")

# ---- nbgrader: hand-out and collection on one machine (release/fetch/submit/collect, feedback)
# The exchange is a folder of the course directory; nbgrader creates it world-writable on the first release.
# On a hub the exchange is a shared folder outside the course: the hub gives its path to every server
c.Exchange.root = os.environ.get("AUTOGRADER_EXCHANGE") or str(COURSE / "exchange")

# ---- nbgrader: execution (plain `nbgrader autograde`, and the formgrader's Autograde button)
c.Execute.timeout = 30  # seconds per cell
c.Execute.interrupt_on_timeout = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE: replace the next line with your code\nraise NotImplementedError()"}

# ---- nbgrader: feedback never shows hidden tests, even for a notebook plain nbgrader autograded (the formgrader's
# Autograde button), which writes them into autograded/. Set where nbgrader's converters run (its commands and
# the formgrader); `python -m autograder grade` loads no converter and writes no hidden test.
if "nbgrader.converters" in sys.modules:
    from autograder.grading.pages.redaction import feedback_preprocessors

    c.GenerateFeedback.preprocessors = feedback_preprocessors()
    # nbgrader's own page, each test cell named in its contents (autograder/grading/pages/feedback_page.py)
    c.GenerateFeedback.exporter_class = "autograder.grading.pages.feedback_page.FeedbackExporter"

# ---- nbgrader: every HTML export of a notebook (the feedback, and the formgrader's view of a submission) first makes
# learner content inert: no script runs, no HTML, SVG or markdown is shown uncleaned
# (autograder/grading/pages/safe_html.py, safe_export.py).
# nbgrader's own feedback and formgrade templates would render a submission's script as it is.
c.HTMLExporter.preprocessors = ["autograder.grading.pages.safe_export.SafeHTML"]
# ... and every page a person opens is inert by construction (autograder/grading/pages/page_policy.py). The feedback page
# gets its Content-Security-Policy from FeedbackExporter, and the project's template folder first (its mathjax()
# loads nothing, where nbconvert's asks a CDN). The formgrader sets its exporter's template name and folders itself,
# so its view names the project's page as its template file: nbgrader's formgrade template with an inert head (the
# policy, every script with the page's nonce) and bar.
from autograder.grading.pages.page_policy import FORMGRADE_PAGE, TEMPLATES, template_basedirs  # noqa: E402

c.HTMLExporter.extra_template_basedirs = template_basedirs()
c.HTMLExporter.extra_template_paths = [str(TEMPLATES)]
c.HTMLExporter.template_file = FORMGRADE_PAGE
c.FeedbackExporter.template_file = "index.html.j2"  # nbgrader's feedback page (GenerateFeedback's own paths)

# ---- nbgrader: late submissions. Both graders apply this plugin to every notebook submitted after the due date
# (plus the student's extension). 'none' (nbgrader's default) records no penalty; 'zero' takes the notebook's
# whole score. For another rule, write a subclass of nbgrader.plugins.LateSubmissionPlugin and name it here:
#   c.AssignLatePenalties.plugin_class = "mycourse.OnePointPerDayLate"
c.LateSubmissionPlugin.penalty_method = "none"

# ---- the autograder's own settings: every limit and tolerance, with its default and what it bounds, is in
# autograder/settings.py (classes Tolerance, Limits, BatchGrading). Set here only what this course changes, e.g.
#   c.Limits.cell_timeout = 120.0  # seconds per cell, on a slow machine
#   c.BatchGrading.jobs = 4        # notebooks graded at a time (default: one more than the CPUs, as many as fit in memory)
#   c.Hints.level = "solution"     # a failed check may also write the correct expression (default "misconception": it
#                                  # names the misconception and shows the learner's own formula, never the answer);
#                                  # graded runs and learners' kernels follow it (a notebook's metadata
#                                  # {"autograder": {"hints": ...}} overrides it in the learner's own kernel)
