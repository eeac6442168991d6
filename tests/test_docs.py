"""The README and the docs site: one screen of README, pages that name only what exists and type no figure by hand,
the system packages the guides install, the pictures the browser tests take, and a build with warnings as errors and
every internal link and anchor checked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import references as ref  # noqa: E402

README = ROOT / "README.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_the_readme_is_one_screen_with_the_two_commands_and_the_three_ways_in():
    text = README.read_text()
    assert len(text.encode()) < 8 * 1024, "the README is more than one screen: move the rest into docs/"
    section = text.split("\n## The two commands\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    assert [ln.split("#")[0].strip() for ln in block.splitlines()] == ["./workbook lab", "./workbook test"]
    links = LINK.findall(text)
    for target in (t for t in links if not t.startswith("http")):
        assert (ROOT / target.split("#")[0]).exists(), f"the README links to a missing {target}"
    for way in ("docs/learner/", "docs/instructor/", "docs/contributing.md"):
        assert any(t.startswith(way) for t in links), f"the README has no way in through {way}"
    from browser_support import DOCS_PICTURES

    pictures = [t for t in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text)]
    assert len(pictures) == 1 and Path(pictures[0]).name in DOCS_PICTURES, pictures  # one picture, a test's
    assert (ROOT / pictures[0]).stat().st_size < 64 * 1024, "the README's picture is not small"


def test_every_page_names_only_files_tests_commands_and_settings_that_exist():
    pages = ref.page_sources()
    assert len(pages) >= 12
    problems = [p for page in pages for p in ref.problems(page)]
    assert not problems, "\n".join(problems)


WRONG = {
    "path": "see `autograder/grading/nowhere.py`",
    "command": "run `python -m autograder gradee workbook`",
    "option": "`python -m autograder grade workbook --jobz 2`",
    "workbook": "`./workbook labb`",
    "workbook option": "`./workbook hub --create-user`",
    "nbgrader": "`nbgrader autogradee workbook`",
    "setting": "set `Limits.check_timout`",
    "config line": "c.Limitz.memory_mb = 1",
    "role setting": "{setting}`Tolerance.rtoll`",
    "test": "{test}`tests/test_cli.py::test_that_does_not_exist`",
    "test file": "{test}`tests/test_nowhere.py`",
    "code": "{src}`autograder.grading.batch.no_such_function`",
    "figure": "{bench}`bench_grade.no_such_figure`",
    "misconception": "{misconception}`add.no_such_mistake`",
}


def test_a_page_naming_what_does_not_exist_is_caught():
    for what, line in WRONG.items():
        assert ref.problems_in(line, "page.md"), f"a wrong {what} went unnoticed: {line}"
    right = ("`autograder/grading/batch.py`, `python -m autograder grade workbook --jobs 2 --csv`, `./workbook hub "
             "--create-users`, `nbgrader autograde workbook`, `Limits.check_timeout`, {setting}`Tolerance.rtol`, "
             "{test}`tests/test_cli.py::test_bad_usage_exits_2_with_one_line`, {src}`autograder.grading.batch.run`, "
             "{misconception}`add.assigns_instead_of_accumulating`, c.CourseDirectory.db_url")
    assert ref.problems_in(right, "page.md") == []


def test_no_page_types_a_timing_by_hand():
    typed = [f"{page.relative_to(ROOT)}:{line}: {figure}" for page in ref.page_sources()
             for line, figure in ref.hand_typed_timings(page.read_text())]
    assert not typed, ("figures typed by hand (quote a benchmark's results with {bench}, a setting's default with "
                       "{default}):\n" + "\n".join(typed))
    caught = ref.hand_typed_timings("took 6.6 s, 40 ms a worker, 3 min in all, 18.3x faster, 1.2-1.8 s slower")
    assert [f for _, f in caught] == ["6.6 s", "40 ms", "3 min", "18.3x", "1.8 s"]
    assert ref.hand_typed_timings("{default}`Limits.check_timeout` and {bench}`bench_grade.speedup`, 12 x 6") == []


@pytest.mark.slow  # each benchmark imports what it measures
@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "benchmarks").glob("*.py") if p.name != "results.py"))
def test_every_benchmark_starts_after_the_code_it_imports_moved(script: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--help"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-2000:]


def test_every_benchmark_writes_one_results_format_and_the_benchmarks_page_shows_every_file():
    """One format: each benchmark takes --results and records through results.recording; each results file names its
    command, date, commit, machine, notes, figures (value, unit, what) and output; docs/benchmarks.md shows each."""
    benchmarks = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if p.name != "results.py")
    assert len(benchmarks) >= 9
    for script in benchmarks:
        source = script.read_text()
        assert f'add_option(parser, "{script.stem}")' in source and f'recording("{script.stem}"' in source, script.name
        assert "results.write(" not in source, script.name
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    files = sorted(ref.RESULTS.glob("*.json"))
    assert {f.stem for f in files} == {s.stem for s in benchmarks}, "a benchmark without results, or results without one"
    for file in files:
        data = ref.results(file.stem)
        assert set(data) == {"benchmark", "command", "date", "commit", "machine", "notes", "figures", "output"}, file.name
        assert data["benchmark"] == file.stem and data["command"].startswith(f".venv/bin/python benchmarks/{file.stem}.py")
        assert data["figures"] and data["output"] and data["machine"]["load_average_at_end"], file.name
        for key, fig in data["figures"].items():
            assert re.fullmatch(r"[a-z0-9_]+", key) and isinstance(fig["value"], (int, float)), (file.name, key)
            assert isinstance(fig["unit"], str) and fig["what"], (file.name, key)
        assert f"```{{benchmark-results}} {file.stem}\n" in page, f"docs/benchmarks.md does not show {file.name}"


def test_the_guides_install_every_system_package_the_code_asks_for():
    sources = [*(ROOT / "autograder").rglob("*.py"), *(ROOT / "scripts").glob("*.py"), ROOT / "workbook"]
    asked = set().union(*(ref.package_installs(p.read_text()) for p in sources))
    assert {"bubblewrap", "python3-venv", "npm"} <= asked, asked  # what the grader and ./workbook tell a user to install
    marked = [p for p in ref.page_sources() if "<!-- system-packages:" in p.read_text()]
    assert {p.name for p in marked} >= {"one-machine.md", "jupyterhub.md"}
    for page in marked:
        installed = ref.package_installs(ref.marked_block(page.read_text(), "system-packages"))
        assert asked <= installed, f"{page.relative_to(ROOT)} does not install {sorted(asked - installed)}"
    script = (ROOT / "workbook").read_text()
    for_tests = set(re.findall(r"^\s*system_package ([a-z0-9.+-]+) ", script, re.M)) | asked
    contributing = ref.package_installs(ref.marked_block((ROOT / "docs" / "contributing.md").read_text(),
                                                         "contributor-packages"))
    assert for_tests <= contributing, f"contributing.md does not install {sorted(for_tests - contributing)}"


def test_every_docs_picture_is_taken_by_a_browser_test():
    from browser_support import DOCS_PICTURES, DOCS_SCREENS

    assert sorted(p.name for p in DOCS_SCREENS.glob("*")) == sorted(DOCS_PICTURES)
    for name, test in DOCS_PICTURES.items():
        path, function = test.split("::")
        source = (ROOT / path).read_text()
        body = source[source.index(f"def {function}("):]
        body = body[:body.index("\ndef ", 1)] if "\ndef " in body[1:] else body
        assert f'"{name}")' in body, f"{test} does not take {name}"
    for page in ref.page_sources():
        for target in LINK.findall(page.read_text()):
            if target.endswith(".png") and not target.startswith("http"):
                assert (page.parent / target).resolve().exists(), f"{page.relative_to(ROOT)}: no picture {target}"


def test_the_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    from workbook_docs import broken_links

    (tmp_path / "a.html").write_text('<a href="b.html#here">b</a> <a href="c.html">c</a> <a href="#top">top</a>'
                                     '<a href="https://example.org/x#y">out</a><p id="top"></p>')
    (tmp_path / "b.html").write_text("<p id='elsewhere'></p>")
    assert sorted(broken_links(tmp_path)) == ["a.html: link to a missing anchor b.html#here",
                                              "a.html: link to a missing file c.html"]
    (tmp_path / "b.html").write_text("<p id='here'></p>")
    (tmp_path / "c.html").write_text("")
    assert broken_links(tmp_path) == []


@pytest.mark.slow  # runs every example cell of the site in a Jupyter kernel
def test_the_site_builds_with_warnings_as_errors_and_every_internal_link_resolves(tmp_path):
    out = tmp_path / "site"
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n", "-q",
                           str(ROOT / "docs"), str(out)], capture_output=True, text=True, env=env, timeout=1200)
    warnings = [ln for ln in done.stderr.splitlines() if ": WARNING:" in ln or ": ERROR:" in ln]  # Sphinx's own
    assert done.returncode == 0 and not warnings, done.stderr[-5000:]
    from autograder.checks.messages import MISCONCEPTIONS

    catalogue = (out / "how-checks-diagnose.html").read_text()
    assert all(f">{key}<" in catalogue for key in MISCONCEPTIONS), "the catalogue misses a misconception"
    assert "✗ add_local_backward" in catalogue and "accumulate" in catalogue  # the example cells ran
    settings = (out / "configuration.html").read_text()
    assert all(f"c.{s.key}" in settings for cls in ref.our_settings().values() for s in ref.own_settings(cls))
    for page in out.rglob("*.html"):  # no request leaves the site: scripts, styles and pictures are its own
        text = page.read_text()
        loads = re.findall(r"<(?:script|img|iframe)[^>]*\ssrc=\"(https?:|//)[^\"]*|<link[^>]*\shref=\"(?:https?:|//)", text)
        assert not loads, f"{page.relative_to(out)} loads from another host: {loads[:3]}"


FIXED_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def test_no_guide_shows_a_fixed_date_that_will_be_past_when_read():
    """An example date is computed when the command runs ($(date ...)) or is a placeholder, never a calendar date."""
    sources = [*ref.page_sources(), ROOT / "nbgrader_config.py", ROOT / "grading_config.py", *(ROOT / "hub").rglob("*.py")]
    dated = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in sources
             for n, line in enumerate(p.read_text().splitlines(), 1) if FIXED_DATE.search(line)]
    assert not dated, "\n".join(dated)
    steps = ref.marked_block((ROOT / "docs" / "instructor" / "one-machine.md").read_text(), "course-steps")
    due = next(ln for ln in steps.splitlines() if "--duedate" in ln)
    assert "$(date" in due, due  # tests/test_course_flow.py runs it and checks the date lands in the future
