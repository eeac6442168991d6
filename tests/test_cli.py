"""`python -m autograder check PATH [--json]`: exit codes, the JSON schema, and one-line errors."""

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ENGINES, ROOT
from mistakes import BY_NAME

import autograder
from autograder.loader import check_calls


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def one_clean_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert lines[0].startswith("autograder: error: ")
    return lines[0]


def test_reference_engine_exits_0_with_a_check_mark_per_check():
    p = run("check", str(ENGINES / "reference.py"))
    assert p.returncode == 0 and p.stderr == ""
    lines = p.stdout.splitlines()
    n = len(lines) - 1
    assert n >= 24 and all(ln.startswith("✓ ") for ln in lines[:-1]) and lines[-1] == f"score: {n} / {n}"


def test_buggy_engine_exits_1_and_names_the_failure(tmp_path):
    path = tmp_path / "buggy.py"
    path.write_text(BY_NAME["tanh_uses_input"].source())
    p = run("check", str(path))
    assert p.returncode == 1 and p.stderr == ""
    lines = p.stdout.splitlines()
    at = lines.index(next(ln for ln in lines if ln.startswith("✗ tanh_backward: ")))
    # the method and the misconception's sentence first, then the numbers, then the reproduce lines
    assert lines[at].startswith("✗ tanh_backward: Value.tanh: ") and "written with t = tanh(x), the OUTPUT" in lines[at]
    assert lines[at + 1].startswith("    seen: out = a.tanh() with a = Value(") and lines[at + 2] == "    reproduce:"
    assert "tanh_local" not in p.stdout and "hint:" not in p.stdout  # no probe's internal name, no raw label


def test_json_output_matches_the_schema(tmp_path):
    path = tmp_path / "buggy.py"
    path.write_text(BY_NAME["mse_is_sum"].source())
    p = run("check", str(path), "--json")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert set(doc) == {"score", "max_score", "checks"}
    keys = {"name", "targets", "passed", "points", "max_points", "message", "status", "misconception", "culprit",
            "same_as", "repro", "raised_in", "recovered"}
    assert all(set(c) == keys for c in doc["checks"])
    assert all(isinstance(c["targets"], list) and all(isinstance(t, str) for t in c["targets"]) for c in doc["checks"])
    assert all(isinstance(c["passed"], bool) and isinstance(c["message"], str) for c in doc["checks"])
    assert doc["score"] == sum(c["points"] for c in doc["checks"]) < doc["max_score"]
    assert doc["max_score"] == sum(c["max_points"] for c in doc["checks"])
    failed = {c["name"] for c in doc["checks"] if not c["passed"]}
    assert "mse_loss_backward" in failed and all(c["points"] == 0 for c in doc["checks"] if not c["passed"])


def test_json_of_the_reference_engine_is_full_marks():
    doc = json.loads(run("check", str(ENGINES / "reference.py"), "--json").stdout)
    assert doc["score"] == doc["max_score"] == len(doc["checks"]) and all(c["passed"] for c in doc["checks"])


@pytest.mark.parametrize("args", [(), ("frobnicate",), ("check",), ("check", "x.py", "--colour"), ("--nope",)],
                         ids=["no-args", "unknown-command", "no-path", "unknown-option", "unknown-global-option"])
def test_bad_usage_exits_2_with_one_line(args):
    p = run(*args)
    assert p.returncode == 2 and p.stdout == ""
    one_clean_line(p.stderr)


def bad_files(tmp_path):
    (tmp_path / "dir.py").mkdir()
    (tmp_path / "latin1.py").write_bytes(b"x = '\xe9t\xe9'\n")
    (tmp_path / "truncated.ipynb").write_text('{"cells": [{"cell_type": "code", "sou')
    (tmp_path / "notes.txt").write_text("class Value: pass\n")
    (tmp_path / "list.ipynb").write_text("[1, 2, 3]")
    return {
        "missing": (tmp_path / "nope.py", "no such file"),
        "directory": (tmp_path / "dir.py", "is a directory"),
        "non-utf8": (tmp_path / "latin1.py", "not UTF-8"),
        "truncated-json": (tmp_path / "truncated.ipynb", "not a readable notebook"),
        "txt": (tmp_path / "notes.txt", "expected a .py file or an .ipynb notebook"),
        "json-not-a-notebook": (tmp_path / "list.ipynb", "notebook"),
    }


@pytest.mark.parametrize("kind", ["missing", "directory", "non-utf8", "truncated-json", "txt", "json-not-a-notebook"])
def test_unreadable_file_exits_2_with_one_line(kind, tmp_path):
    path, says = bad_files(tmp_path)[kind]
    p = run("check", str(path))
    assert p.returncode == 2 and p.stdout == ""
    line = one_clean_line(p.stderr)
    assert says in line and str(path) in line


def test_missing_config_file_exits_2_with_one_line():
    p = run("check", str(ENGINES / "reference.py"), "--config", "/no/such/config.py")
    assert p.returncode == 2
    assert "config file not found" in one_clean_line(p.stderr)


def test_a_setting_of_the_wrong_kind_stops_check_in_one_line(tmp_path):
    config = tmp_path / "nbgrader_config.py"
    config.write_text("c.Tolerance.rtol = 'tight'\n")
    p = run("check", str(ENGINES / "reference.py"), "--config", str(config))
    assert p.returncode == 2 and p.stdout == ""
    assert "a setting in the config is not valid: The 'rtol' trait" in one_clean_line(p.stderr)


def test_names_the_file_lacks_are_failed_not_implemented_checks(tmp_path):
    src = (ENGINES / "reference.py").read_text().split("class Neuron:")[0]
    path = tmp_path / "engine_only.py"
    path.write_text(src)
    doc = json.loads(run("check", str(path), "--json").stdout)
    by = {c["name"]: c for c in doc["checks"]}
    for name, missing in [("neuron_forward", "Neuron"), ("layer_forward", "Layer"), ("mlp_forward", "MLP"),
                          ("mse_loss_backward", "mse_loss"), ("train_descends", "train")]:
        assert not by[name]["passed"] and by[name]["message"].startswith("not implemented yet") and missing in by[name]["message"]
    assert all(by[n]["passed"] for n in ("add_backward", "tanh_backward", "backward_once_per_node"))


def test_a_stub_file_scores_zero_and_says_why(tmp_path):
    path = tmp_path / "stub.py"
    path.write_text("class Value:\n    def __init__(self, data, _children=(), _op='', label=''):\n"
                    "        raise NotImplementedError()\n")
    doc = json.loads(run("check", str(path), "--json").stdout)
    assert doc["score"] == 0 and all(not c["passed"] for c in doc["checks"])
    assert all("not implemented yet" in c["message"] for c in doc["checks"])


def test_a_file_that_fails_to_import_is_graded_zero_with_the_reason(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def oops(:\n")
    p = run("check", str(path))
    assert p.returncode == 1 and "SyntaxError at line 1" in p.stdout and "Traceback" not in p.stdout + p.stderr


def test_notebook_path_imports_only_definition_cells(tmp_path):
    nb = nbformat.v4.new_notebook()
    engine = (ENGINES / "reference.py").read_text()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Build the engine"),
        nbformat.v4.new_code_cell("%matplotlib inline\n" + engine,
                                  metadata={"nbgrader": {"solution": True, "grade": False, "grade_id": "engine"}}),
        nbformat.v4.new_code_cell("from autograder import check\ncheck('add_backward')"),
        nbformat.v4.new_code_cell("raise RuntimeError('a grade cell must not run')",
                                  metadata={"nbgrader": {"grade": True, "solution": False, "points": 1}}),
        nbformat.v4.new_code_cell("import sys; sys.exit(1)", metadata={"tags": ["demo"]}),
        nbformat.v4.new_code_cell("Value.__add__ = None", metadata={"tags": ["plot"]}),
        nbformat.v4.new_code_cell("while True: pass", metadata={"tags": ["skip-import"]}),
    ]
    path = tmp_path / "workbook.ipynb"
    nbformat.write(nb, path)
    p = run("check", str(path), "--json", "--all")  # the whole catalogue on the notebook's definitions
    assert p.returncode == 0, p.stdout
    doc = json.loads(p.stdout)
    assert doc["score"] == doc["max_score"] >= 24
    own = json.loads(run("check", str(path), "--json").stdout)  # the notebook's own check cell, where it stands
    assert [c["name"] for c in own["checks"]] == ["add_backward"] and own["score"] == own["max_score"] == 1
    assert own["cells"] == [{"cell": "cell 3", "grade_id": None, "points": 1, "max_points": 1, "checks": ["add_backward"]}]


def test_a_gradebook_error_never_shows_the_database_password() -> None:
    from autograder.grading.discover.assignment import GradingError, load_assignment

    with pytest.raises(GradingError) as caught:
        load_assignment("postgresql+psycopg://grader:S3cretPW@127.0.0.1:1/course", "workbook")
    assert "S3cretPW" not in str(caught.value) and "grader:***@127.0.0.1:1" in str(caught.value)


# ---------------------------------------------------------------- a notebook: its own check cells, where they stand

def solved(name: str, folder: Path) -> Path:
    """The learner notebook `name` with every stub filled in from the instructor's solutions, in `folder`."""
    learner = nbformat.read(ROOT / "notebooks" / "workbook" / name, as_version=4)
    source = nbformat.read(ROOT / "solutions" / "workbook" / name, as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in learner.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = "\n".join(ln for ln in answers[gid].splitlines() if "### " not in ln)
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(learner, path)
    return path


def guide_check_example() -> tuple[list[str], str]:
    """The learner guide's `check` example on notebook 03 (its words) and the output the guide says it prints."""
    guide = (ROOT / "docs" / "learner" / "index.md").read_text()
    command = next(ln for ln in guide.splitlines() if ln.startswith(".venv/bin/python -m autograder check notebooks/"))
    said = re.search(r"prints a ✓ line per check of its check cells and\s+`(score: [^`]+)`", guide)
    assert said, "the learner guide no longer says what the check example prints"
    return command.split()[1:], " ".join(said.group(1).split())


def test_the_learner_guides_check_example_on_the_solved_notebook_prints_what_the_guide_says(tmp_path):
    args, last = guide_check_example()
    path = solved("03_backward.ipynb", tmp_path / "notebooks" / "workbook")
    assert args[-1] == "notebooks/workbook/03_backward.ipynb"
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert all(ln.startswith("✓ ") for ln in lines[:-1]) and lines[-1] == last, p.stdout
    called = [n for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
              for names, _ in check_calls(cell.source) for n in names]
    assert [ln.split(":")[0][2:] for ln in lines[:-1]] == called  # exactly the notebook's checks, in its order


def test_check_on_a_notebook_judges_each_check_where_its_cell_stands(tmp_path):
    path = solved("02_values.ipynb", tmp_path)
    nb = nbformat.read(path, as_version=4)
    # a demo after the hand-filled grads' check changes them (as 03's second backward() demo changed f.grad)
    nb.cells.append(nbformat.v4.new_code_cell("L.backward = None\nf.grad = 8.0\na.grad = -99.0"))
    nbformat.write(nb, path)
    p = run("check", str(path))
    assert p.returncode == 0, p.stdout
    assert "✓ manual_backprop" in p.stdout and "✗" not in p.stdout
    everything = run("check", str(path), "--all")  # the catalogue on the final namespace sees the demo's state
    assert everything.returncode == 1 and "✗ manual_backprop" in everything.stdout


def test_check_on_a_notebook_shows_each_diagnosis_in_full_once(tmp_path):
    path = solved("06_neural_net.ipynb", tmp_path)
    nb = nbformat.read(path, as_version=4)
    slip = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex_06_neuron")
    slip.source = slip.source.replace("return self.w + [self.b]", "return [self.b] + self.w")
    nbformat.write(nb, path)
    p = run("check", str(path))
    assert p.returncode == 1
    assert p.stdout.count("reproduce:") == 1 and p.stdout.count("    seen: ") == 1  # in full once, at its own exercise
    full = next(ln for ln in p.stdout.splitlines() if ln.startswith("✗ neuron_forward: "))
    assert "bias before its weights" in full
    later = [ln for ln in p.stdout.splitlines() if ln.startswith("✗ ") and ln != full]
    # a Layer is made of the learner's Neurons, an MLP of their Layers; mse_loss and train are judged on the grader's
    assert [ln.split(":")[0] for ln in later] == ["✗ layer_forward", "✗ mlp_forward"]
    assert all(ln.endswith(": needs `Neuron` to pass first: same cause as above") for ln in later)
    assert "score: 3 / 6" in p.stdout


def test_a_slip_in_one_operator_costs_its_own_exercise_only(tmp_path):
    """Issue 34: `self.grad = ...` in __add__'s _backward cost a correct backward() its 4 points and the
    accumulation check its 2; each check now judges its own exercise on the grader's scaffolding."""
    path = solved("03_backward.ipynb", tmp_path)
    nb = nbformat.read(path, as_version=4)
    slip = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex_03_add")
    slip.source = slip.source.replace("self.grad += out.grad", "self.grad = out.grad")
    nbformat.write(nb, path)
    p = run("check", str(path))
    assert p.returncode == 1
    failed = [ln for ln in p.stdout.splitlines() if ln.startswith("✗ ")]
    assert len(failed) == 1 and failed[0].startswith("✗ add_local_backward: Value.__add__: ") and "grad += ..." in failed[0]
    assert "score: 7 / 8" in p.stdout


def test_grade_outside_a_course_says_where_it_looked_and_leaves_nothing_behind(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("AUTOGRADER_CONFIG", "AUTOGRADER_COURSE_DIR")}
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", "workbook"], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=120)
    assert p.returncode == 2
    line = one_clean_line(p.stderr)
    assert f"no nbgrader course in {tmp_path}" in line and "config: none" in line, line  # the folder and the config
    assert "--course" in line and "--config" in line, line  # and how to point it at the course
    assert list(tmp_path.iterdir()) == []  # no gradebook.db, no .autograder.lock
    config = tmp_path / "elsewhere" / "nbgrader_config.py"
    config.parent.mkdir()
    config.write_text(f"c = get_config()\nc.CourseDirectory.root = {str(tmp_path / 'course')!r}\n")
    (tmp_path / "course").mkdir()
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", "workbook", "--config", str(config)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    line = one_clean_line(p.stderr)
    assert p.returncode == 2 and f"config: {config} (--config)" in line and str(tmp_path / "course") in line, line
    assert list((tmp_path / "course").iterdir()) == []


def test_a_refused_grade_in_a_real_course_leaves_no_lock(tmp_path):
    import support

    course = support.make_course(tmp_path / "course")
    before = set(course.iterdir())
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", support.ASSIGNMENT, "--course", str(course),
                        "--config", str(course / "nbgrader_config.py")], capture_output=True, text=True, cwd=tmp_path,
                       env=support.env(), timeout=300)
    assert p.returncode == 2 and "no submissions" in one_clean_line(p.stderr)
    assert set(course.iterdir()) == before  # no .autograder.lock, no secret, no journal


@pytest.mark.parametrize("setting, says", [("c.Limits.rendered_chars = -1", "rendered_chars"),
                                           ("c.Limits.render_timeout = 'soon'", "render_timeout"),
                                           ("c.Tolerance.rtol = 'tight'", "rtol")])
def test_a_setting_of_the_wrong_kind_refuses_the_grade_in_one_line_and_leaves_nothing_behind(tmp_path, setting, says):
    import support

    course = support.make_course(tmp_path / "course")
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text() + f"\n{setting}\n")
    before = {path: path.stat().st_mtime_ns for path in course.rglob("*")}
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", support.ASSIGNMENT, "--course", str(course),
                        "--config", str(config)], capture_output=True, text=True, cwd=tmp_path, env=support.env(), timeout=300)
    line = one_clean_line(p.stderr)
    assert p.returncode == 2 and "a setting in the config is not valid" in line and says in line, line
    assert {path: path.stat().st_mtime_ns for path in course.rglob("*")} == before


def test_the_command_line_of_python_m_autograder_is_read_by_clis_one_parser_alone():
    # other entry points (a helper process's own argument, `python -m autograder.checks`, the .pth installer) read
    # their own argv; `python -m autograder`'s options (--cluster, --jobs, --unsafe-no-sandbox...) only cli.py reads
    own_entry_points = {"cli.py", "__main__.py", "grading/grade/bounded.py", "checks/registry.py", "lean_imports.py"}
    package = Path(autograder.__file__).parent
    readers = {str(p.relative_to(package)) for p in package.rglob("*.py") if "sys.argv" in p.read_text()}
    assert readers <= own_entry_points, readers - own_entry_points
    main_module = (package / "__main__.py").read_text()
    assert main_module.count("sys.argv") == 1 and "warm_for(sys.argv[1:])" in main_module
    assert "--" not in main_module.split('if __name__ == "__main__"')[1]  # no option named outside the parser
