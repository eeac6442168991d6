"""`python -m autograder grade` starts without what a batch never runs, and what it left out still works when used."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

LEFT_OUT = ["nbgrader.server_extensions.formgrader", "nbconvert", "tornado.web", "setuptools", "pkg_resources",
            "isoduration"]

AS_THE_CLI_STARTS = """
import json, runpy, sys
sys.argv = ["autograder", "grade", "workbook", "--course", sys.argv[1], "--unsafe-no-sandbox", "--no-progress"]
try:
    runpy.run_module("autograder", run_name="__main__")
except SystemExit as exc:
    code = exc.code
import nbgrader.api, nbgrader.coursedir, nbgrader.utils  # what grading uses, loaded
print(json.dumps({"code": code, "loaded": sorted(n for n in %r if sys.modules.get(n) is not None)}))
"""


def test_grade_loads_nbgrader_without_its_server_extensions_nbconvert_or_setuptools(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", AS_THE_CLI_STARTS % (LEFT_OUT,), str(tmp_path / "no-course")],
                          capture_output=True, text=True, timeout=120)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 2 and "does not exist" in done.stderr  # the one-line error of a missing course
    assert result["loaded"] == []


def test_nbgraders_unzip_still_works_through_the_archive_stand_in(tmp_path: Path) -> None:
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("alice/workbook/01_derivatives.ipynb", "{}")
    code = f"""
from autograder.grading.nbgrader_light import archive_util_on_first_use, import_without_server_extensions
import sys
assert import_without_server_extensions() and archive_util_on_first_use()
from nbgrader import utils
assert "setuptools" not in sys.modules
utils.unzip({str(archive)!r}, {str(tmp_path / "out")!r})
print("setuptools" in sys.modules)
"""
    (tmp_path / "out").mkdir()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"  # the real module was loaded when first used
    assert (tmp_path / "out" / "alice" / "workbook" / "01_derivatives.ipynb").read_text() == "{}"
