"""The time limit a learner is told is the one in force: `Limits.check_timeout`, in the check's own message and in
every document and notebook that states it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from autograder import check as notebook_check
from autograder.notebook import CheckFailed
from autograder.settings import Limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
STATED = re.compile(r"did not finish within (\d+(?:\.\d+)?) s")


def as_read(page: str) -> str:
    """A page's source as its reader reads it: each {default} role replaced by the default the site shows for it (a
    page states the limit through the setting, never by hand: tests/test_docs.py)."""
    import references as ref

    return ref.ROLE.sub(lambda m: ref.setting(m.group(2)).default_text() if m.group(1) == "default" else m.group(0), page)


def learner_facing_texts() -> dict[str, str]:
    """The README, the docs site's pages (as read) and the notebooks' markdown and code, by path."""
    texts = {"README.md": as_read((ROOT / "README.md").read_text())}
    for path in sorted((ROOT / "docs").rglob("*.md")) if (ROOT / "docs").is_dir() else []:
        texts[str(path.relative_to(ROOT))] = as_read(path.read_text())
    for folder in ("notebooks", "solutions"):
        for path in sorted((ROOT / folder).rglob("*.ipynb")):
            cells = json.loads(path.read_text())["cells"]
            texts[str(path.relative_to(ROOT))] = "\n".join("".join(c["source"]) for c in cells)
    return texts


def test_every_stated_check_time_limit_is_the_setting_in_force():
    in_force = f"{Limits().check_timeout:g}"
    stated = {(where, m.group(1)) for where, text in learner_facing_texts().items() for m in STATED.finditer(text)}
    assert stated, "no document states the check's time limit any more: drop this test with it"
    assert {(where, seconds) for where, seconds in stated if seconds != in_force} == set(), (
        f"Limits.check_timeout is {in_force} s")


@pytest.mark.slow  # (Limits.check_timeout seconds of an endless loop, by design)
def test_a_learners_check_stops_an_endless_loop_at_the_default_limit_and_says_so():
    ns = {"__name__": "__main__"}
    exec("def relative_error(a, b):\n    while True:\n        pass\n", ns)
    with pytest.raises(CheckFailed) as failed:  # (outside a learner's kernel a failing check raises)
        notebook_check("relative_error", ns=ns)
    assert f"did not finish within {Limits().check_timeout:g} s" in str(failed.value)
