"""nbgrader for the instructor's server on the course hub: the course in the instructor's own copy of the checkout.

The instructor keeps a clone of the repository in ~/autograd-workbook (its nbgrader_config.py: the course folder
~/autograd-workbook/course, the sources, the grader's settings); the formgrader reads it from here, since the server
runs in the home folder. The exchange comes from the hub (AUTOGRADER_EXCHANGE), for the formgrader and the commands.
"""

import os
from pathlib import Path

c = get_config()  # noqa: F821 (traitlets provides it)
checkout = Path(os.environ.get("AUTOGRADER_CHECKOUT", Path.home() / "autograd-workbook"))
if (checkout / "nbgrader_config.py").is_file():
    load_subconfig(str(checkout / "nbgrader_config.py"))  # noqa: F821
c.CourseDirectory.course_id = "autograd-workbook"
c.Exchange.root = os.environ.get("AUTOGRADER_EXCHANGE", "/srv/nbgrader/exchange")
