"""Take the docs' screenshots again: run the browser tests that take them, writing each into docs/_static/screens/.

Run: `.venv/bin/python scripts/docs_screenshots.py` (needs Debian's chromium, as the browser tests do). Each picture
is the one its test checks (tests/browser_support.py, DOCS_PICTURES, says which test takes which), colours reduced
to keep the file small; commit the changed files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "workbook"))  # the support modules
sys.path.insert(0, str(ROOT / "tests" / "checks"))

from browser_support import DOCS_PICTURES, DOCS_SCREENS  # noqa: E402


def main() -> int:
    """Run each test that takes a picture once, then list what docs/_static/screens/ holds."""
    tests = sorted(set(DOCS_PICTURES.values()))
    env = os.environ | {"WORKBOOK_DOCS_SCREENSHOTS": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-n0", "-p", "no:cacheprovider", *tests,
                           "-k", "not each_notebook or 04_bricks"], cwd=ROOT, env=env)
    for name in DOCS_PICTURES:
        path = DOCS_SCREENS / name
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size if path.exists() else 'MISSING'} bytes")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
