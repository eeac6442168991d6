"""Kept so that `--NbGrader.config_file=grading_config.py`, `--config grading_config.py` and a course's own config
doing `load_subconfig("/path/to/grading_config.py")` all load the nbgrader_config.py beside this file.

The configuration lives in nbgrader_config.py (where nbgrader looks for it): edit that file.
"""

import os

c = get_config()
# By this file's own folder: traitlets resolves a bare name against the folder of the file that loaded this one.
load_subconfig("nbgrader_config.py", path=os.path.dirname(os.path.abspath(__file__)))
