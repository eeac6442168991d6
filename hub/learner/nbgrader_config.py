"""nbgrader for a learner's server on the course hub: the course and where its exchange is (Assignment List, Validate)."""

import os

c = get_config()  # noqa: F821 (traitlets provides it)
c.CourseDirectory.course_id = "autograd-workbook"
c.Exchange.root = os.environ.get("AUTOGRADER_EXCHANGE", "/srv/nbgrader/exchange")
