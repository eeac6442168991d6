"""The LMS side: Canvas's gradebook CSV as an nbgrader export plugin, Canvas's submissions download for zip_collect."""

from __future__ import annotations

import csv
import datetime
import warnings
import zipfile

import pytest
import support
from nbgrader.api import Gradebook

from autograder.grading.outputs.lms import CANVAS_IDENTITY, POINTS_POSSIBLE, CanvasCollectorPlugin, CanvasExportPlugin
from autograder.grading.outputs.summary import write_csv
from autograder.grading.types import Code, Reason, Row, Status


@pytest.fixture
def gradebook(tmp_path):
    """Three students from a roster, one assignment of 3 points: one on time (2), one late by a day (3, penalty 3)."""
    gb = Gradebook(f"sqlite:///{tmp_path}/gradebook.db")
    gb.add_assignment("ps1", duedate=datetime.datetime(2025, 1, 15, 12))
    gb.add_notebook("engine", "ps1")
    gb.add_grade_cell("g1", "engine", "ps1", max_score=1, cell_type="code")
    gb.add_grade_cell("g2", "engine", "ps1", max_score=2, cell_type="code")
    roster = [("alice", "Alice", "Martin", "1001"), ("bob", "Bob", "Nguyen", "1002"), ("dave", "Dave", "Smith", "1004")]
    for sid, first, last, lms in roster:
        gb.add_student(sid, first_name=first, last_name=last, email=f"{sid}@example.edu", lms_user_id=lms)
    for sid, when, scores, penalty in [("alice", datetime.datetime(2025, 1, 15, 11), (0, 2), None),
                                       ("bob", datetime.datetime(2025, 1, 16, 12), (1, 2), 3.0)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes from inside nbgrader's add_submission
            gb.add_submission("ps1", sid, timestamp=when)
        for gid, score in zip(("g1", "g2"), scores, strict=True):
            gb.find_grade(gid, "engine", "ps1", sid).auto_score = score
        gb.find_submission_notebook("engine", "ps1", sid).late_submission_penalty = penalty
    gb.db.commit()
    yield gb
    gb.close()


def test_canvas_export_writes_canvas_s_identity_columns_points_possible_and_final_scores(gradebook, tmp_path):
    dest = tmp_path / "canvas.csv"
    CanvasExportPlugin(to=str(dest), assignment_columns={"ps1": "Problem set 1 (4242)"}).export(gradebook)
    data = dest.read_bytes().decode("utf-8")  # read back as written: csv's own line ends, \r\n, and nothing else
    assert data.endswith("\r\n") and "\n" not in data.replace("\r\n", "") and "\r" not in data.replace("\r\n", "")
    with open(dest, encoding="utf-8", newline="") as f:
        lines = list(csv.reader(f))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Problem set 1 (4242)"]
    assert lines[0][:5] == CANVAS_IDENTITY
    assert lines[1] == [POINTS_POSSIBLE, "", "", "", "", "3"]
    assert lines[2:] == [["Martin, Alice", "1001", "alice", "alice@example.edu", "", "2"],
                         ["Nguyen, Bob", "1002", "bob", "bob@example.edu", "", "0"],  # 3 points, all taken for lateness
                         ["Smith, Dave", "1004", "dave", "dave@example.edu", "", "0"]]  # nothing submitted


def test_canvas_export_keeps_only_the_chosen_students(gradebook, tmp_path):
    dest = tmp_path / "canvas.csv"
    CanvasExportPlugin(to=str(dest), student=["bob"]).export(gradebook)
    lines = list(csv.reader(dest.read_text().splitlines()))
    assert lines[0][-1] == "ps1" and [ln[2] for ln in lines[2:]] == ["bob"]


@pytest.mark.parametrize(("name", "expected"), [
    ("martinalice_1001_5551_engine.ipynb", {"student_id": "alice", "file_id": "engine.ipynb"}),
    ("nguyenbob_LATE_1002_5552_engine.ipynb", {"student_id": "bob", "file_id": "engine.ipynb"}),
    ("nguyenbob_1002_5553_03_backward-2.ipynb", {"student_id": "bob", "file_id": "03_backward.ipynb"}),  # resubmitted
    ("strangerx_9999_5554_engine.ipynb", None),  # not on the roster
    ("martinalice_1001_5551_notes.txt", None),
])
def test_canvas_collector_maps_canvas_file_names_to_roster_students(name, expected):
    plugin = CanvasCollectorPlugin()
    plugin._by_lms_id = {"1001": "alice", "1002": "bob"}
    assert plugin.collect(f"/course/downloaded/ps1/extracted/submissions/{name}") == expected


def test_summary_csv_of_a_student_run_keeps_the_other_students_lines(tmp_path):
    path = str(tmp_path / "summary.csv")
    write_csv([Row("a", "nb", 1, 2, Status.GRADED), Row("b", "nb", 2, 2, Status.GRADED)], path, "ps1")
    write_csv([Row("b", "nb", 0, 2, Status.NOT_GRADED, reasons=[Reason(Code.UNREADABLE, "broken")])], path, "ps1", keep_other_students=True)
    rows = [(r["student_id"], r["score"], r["status"]) for r in csv.DictReader(open(path))]
    assert rows == [("a", "1", "graded"), ("b", "0", "not graded")]


@pytest.mark.slow
def test_zip_collect_files_a_canvas_download_under_the_roster_s_student_ids(tmp_path):
    root = support.make_course(tmp_path / "course")
    (tmp_path / "roster.csv").write_text("id,first_name,last_name,email,lms_user_id\n"
                                         "alice,Alice,Martin,alice@example.edu,1001\nbob,Bob,Nguyen,bob@example.edu,1002\n")
    support.nbgrader(root, "db", "student", "import", str(tmp_path / "roster.csv"))
    released = (root / "release" / support.ASSIGNMENT / f"{support.NOTEBOOK}.ipynb").read_bytes()
    archive = root / "downloaded" / support.ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as z:  # Canvas: Assignment -> Download Submissions
        z.writestr(f"martinalice_1001_5551_{support.NOTEBOOK}.ipynb", released)
        z.writestr(f"nguyenbob_LATE_1002_5552_{support.NOTEBOOK}-1.ipynb", released)
        z.writestr(f"strangerx_9999_5554_{support.NOTEBOOK}.ipynb", released)
    r = support.nbgrader(root, "zip_collect", support.ASSIGNMENT, "--collector=autograder.grading.outputs.lms.CanvasCollectorPlugin")
    assert "not recognized" not in r.stderr
    submitted = sorted(p.relative_to(root / "submitted").as_posix() for p in (root / "submitted").rglob("*.ipynb"))
    assert submitted == [f"alice/{support.ASSIGNMENT}/{support.NOTEBOOK}.ipynb", f"bob/{support.ASSIGNMENT}/{support.NOTEBOOK}.ipynb"]
    assert "9999 is not on the roster" in r.stderr
