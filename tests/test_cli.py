"""`python -m autograder check PATH [--json]`: exit codes, the JSON schema, and one-line errors."""

import json
import subprocess
import sys

import nbformat
import pytest
from conftest import ENGINES, ROOT
from mistakes import BY_NAME


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
    assert "✗ tanh_backward: Value.tanh: out = a.tanh() with a = Value(" in p.stdout
    assert "1 - t**2 with t = tanh(x), the OUTPUT" in p.stdout


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
    p = run("check", str(path), "--json")
    assert p.returncode == 0, p.stdout
    doc = json.loads(p.stdout)
    assert doc["score"] == doc["max_score"] >= 24


def test_a_gradebook_error_never_shows_the_database_password() -> None:
    from autograder.grading.source import GradingError, load_assignment

    with pytest.raises(GradingError) as caught:
        load_assignment("postgresql+psycopg://grader:S3cretPW@127.0.0.1:1/course", "workbook")
    assert "S3cretPW" not in str(caught.value) and "grader:***@127.0.0.1:1" in str(caught.value)
