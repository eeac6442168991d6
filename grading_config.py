"""Kept so that `--NbGrader.config_file=grading_config.py` and `--config grading_config.py` still work.

The configuration lives in nbgrader_config.py (where nbgrader looks for it): edit that file.
"""

c = get_config()
load_subconfig("nbgrader_config.py")
