"""Sphinx configuration of the documentation site: `./workbook docs` builds it into build/docs/.

MyST-NB reads the pages (Markdown) and runs their example cells in a Jupyter kernel as the site builds, so every
diagnosis a page shows is the grader's own output; `_ext/workbook_docs.py` reads the catalogue, the settings, the
benchmark figures and the names of files, tests and commands from the project itself and checks every internal link.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # the checkout's own autograder, even where it is not installed

import autograder  # noqa: E402

project = "autograd-workbook"
author = "the autograd-workbook maintainers"
copyright = "the autograd-workbook maintainers"
release = version = autograder.__version__

extensions = ["myst_nb", "workbook_docs"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
nitpicky = True  # every cross-reference must resolve
smartquotes = False  # `--results` and `--version` stay as typed in prose too, never turned into dashes

# MyST: Markdown pages; headings get anchors (#how-a-check-diagnoses) that links may name, and that are checked
myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3

# MyST-NB: the example cells run on every build, in this environment's kernel; an error in one fails the build
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 120
nb_merge_streams = True

html_theme = "furo"
html_title = f"autograd-workbook {release}"
html_static_path = ["_static"]
html_show_sourcelink = False
html_copy_source = False
